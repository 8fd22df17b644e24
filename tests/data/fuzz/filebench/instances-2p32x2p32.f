
define fileset name=fs1,path=/tmp,entries=10,dirwidth=5,size=4k,prealloc=50
define process name=p,instances=4294967296
{
  thread name=t,instances=4294967296 {
    flowop createfile name=c,filesetname=fs1,fd=1
    flowop closefile name=x,fd=1
  }
}
run 5
