
define fileset name=fs1,path=/tmp,entries=10,dirwidth=5,size=4k,prealloc=50
define process name=p,instances=1
{
  thread name=t,instances=1 {
    flowop delay name=d,value=1,iters=1000000000000
  }
}
run 5
