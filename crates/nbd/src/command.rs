//! `trimlab serve --run CMD`: the command runs under `sh -c` in a process group of its own, so
//! that stopping it stops everything it started (issue 26: a SIGTERM killed `sh` and left
//! `nbdfuse ... &` and the like running).

use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

pub struct CommandGroup {
    child: Child,
    status: Option<ExitStatus>,
}

impl CommandGroup {
    /// Starts `sh -c script` with `$uri` and `$nbd` set to `uri`, as the leader of a new
    /// process group (so it cannot read the terminal).
    pub fn spawn(script: &str, uri: &str) -> io::Result<CommandGroup> {
        let child = std::process::Command::new("sh")
            .args(["-c", script])
            .env("uri", uri)
            .env("nbd", uri)
            .process_group(0)
            .spawn()?;
        Ok(CommandGroup { child, status: None })
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The command's status, once it has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.status.is_none() {
            self.status = self.child.try_wait()?;
        }
        Ok(self.status)
    }

    fn group(&self) -> Option<Pid> {
        Pid::from_raw(self.child.id() as i32)
    }

    /// Ends the whole group: SIGTERM to every process in it, SIGKILL to whatever is left after
    /// `grace`. Returns the command's status.
    pub fn stop(&mut self, grace: Duration) -> io::Result<ExitStatus> {
        let Some(group) = self.group() else { return self.child.wait() };
        // ESRCH: nobody is left in the group.
        let _ = kill_process_group(group, Signal::TERM);
        let end = Instant::now() + grace;
        loop {
            let exited = self.try_wait()?.is_some();
            if exited && test_kill_process_group(group).is_err() {
                break;
            }
            if Instant::now() >= end {
                let _ = kill_process_group(group, Signal::KILL);
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        match self.status {
            Some(status) => Ok(status),
            None => {
                let status = self.child.wait()?;
                self.status = Some(status);
                Ok(status)
            }
        }
    }
}
