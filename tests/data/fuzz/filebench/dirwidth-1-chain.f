
define fileset name=fs1,path=/tmp,entries=100000,dirwidth=1,size=4k,prealloc=50
define process name=p,instances=1
{
  thread name=t,instances=1 {
    flowop createfile name=c,filesetname=fs1,fd=1
    flowop closefile name=x,fd=1
  }
}
run 5
