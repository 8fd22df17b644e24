# trimlab: Filebench's deletefiles.f as Sun shipped it (github.com/mludvig/filebench-pre-fsl,
# workloads/deletefiles.f; CDDL 1.0: see LICENSE here). Today's Filebench (22620e6) has it as
# filemicro_delete.f. Unchanged; to scale it, change only the `set $...` lines below. Without a
# `set mode quit` line it stops early when no file is left, as Filebench reports it.
#
# Copyright 2005 Sun Microsystems, Inc.  All rights reserved.
#
# The contents of this file are subject to the terms of the
# Common Development and Distribution License.
# See the file LICENSING in this distribution for details.
#

set $dir=/tmp
set $nfiles=50000
set $meandirwidth=100
set $filesize=16k
set $nthreads=16

define fileset name=bigfileset,path=$dir,size=$filesize,entries=$nfiles,dirwidth=$meandirwidth,prealloc=100

define process name=filedelete,instances=1
{
  thread name=filedeletethread,memsize=10m,instances=$nthreads
  {
    flowop deletefile name=deletefile1,filesetname=bigfileset,fd=1
    flowop opslimit name=limit
  }
}

echo  "Deletefiles Version $Revision: 1.7 $ $Date: 2005/06/14 19:36:36 $ personality successfully loaded"
usage "Usage: set \$dir=<dir>"
usage "       set \$filesize=<size>    defaults to $filesize"
usage "       set \$nfiles=<value>     defaults to $nfiles"
usage "       set \$nthreads=<value>   defaults to $nthreads"
usage "       set \$meandirwidth=<size> defaults to $meandirwidth"
usage "(sets mean dir width and dir depth is calculated as log (width, nfiles)"
usage " "
usage "       run runtime (e.g. run 60)"
