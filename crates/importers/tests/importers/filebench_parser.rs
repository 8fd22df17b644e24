//! Parsing Filebench models: a small model read whole, and errors naming the line and what is accepted.

use trimlab_importers::filebench::parse;

fn err(text: &str) -> String {
    parse(text, "t.f").unwrap_err().to_string()
}

const SMALL: &str = "set $n=10\ndefine fileset name=fs1,path=/tmp,entries=$n,dirwidth=5,size=4k,prealloc=50\n\
    define process name=p,instances=2\n{\n  thread name=t,instances=3 {\n    flowop createfile name=c,filesetname=fs1,fd=1\n    flowop closefile name=x,fd=1\n  }\n}\nrun 5\n";

#[test]
fn a_small_model_reads_whole() {
    let m = parse(SMALL, "t.f").unwrap();
    assert_eq!(m.filesets[0].entries, 10);
    assert_eq!(m.filesets[0].prealloc_percent, 50);
    assert_eq!(m.threads[0].instances, 6);
    assert_eq!(m.threads[0].flowops.len(), 2);
    assert_eq!(m.runtime_s, Some(5));
    // A set below the define still counts: Filebench reads variables when the run starts.
    let later = parse(&format!("{SMALL}set $n=20\n"), "t.f").unwrap();
    assert_eq!(later.filesets[0].entries, 20);
}

#[test]
fn errors_name_the_line_and_what_is_accepted() {
    let e = err(&SMALL.replace("createfile name=c", "frobfile name=c"));
    assert!(e.starts_with("t.f:6: `flowop frobfile"), "{e}");
    assert!(e.contains("accepted: createfile, openfile"), "{e}");
    assert!(err(&SMALL.replace("fd=1\n    flowop closefile", "fdx=1\n    flowop closefile"))
        .contains("unknown attribute \"fdx\" for flowop createfile (accepted: name, filesetname"));
    assert!(err(&SMALL.replace("filesetname=fs1", "filesetname=nope")).contains("t.f:6:"));
    assert!(err(&SMALL.replace("filesetname=fs1", "filesetname=nope"))
        .contains("no fileset \"nope\" (defined: fs1)"));
    assert!(err(&SMALL.replace("$n=10", "$m=10")).contains("$n is not set"));
    assert!(err("system \"ls\"").contains("does not model"));
    assert!(err("bogus x").contains("unknown statement \"bogus\" (accepted: set, define"));
    assert!(err("define process name=p\nflowop x").contains("t.f:2: `flowop x`: expected '{'"));
    assert!(err(&SMALL.replace("run 5\n", "run 5\nrun 6\n")).contains("second run line"));
    assert!(err(&SMALL[..SMALL.len() - 8]).contains("'}' is missing"));
    assert!(err("define randvar name=$x").contains("cvar"));
    assert!(err("define fileset name=a,entries=1,dirwidth=1,leafdirs=5").contains("leafdirs"));
    let e = err("define fileset name=a,entries=1,dirwidth=1,size=cvar(type=x)");
    assert!(e.contains("cvar type \"x\""), "{e}");
}
