
define fileset name=fs1,path=/tmp,entries=10,dirwidth=5,size=4k,prealloc=50
define process name=p,instances=1
{
  thread name=t,instances=1 {
    flowop openfile name=o,filesetname=fs1,fd=1
    flowop appendfile name=a,fd=1,iosize=1048576t
  }
}
run 5
