//! A real PostgreSQL server of our own (`initdb` into a temporary
//! directory, `postgres` on a free loopback port), for the audit store
//! replicas share. Without the server's programs the tests that need it say
//! so and return, unless `TOOLGATE_REQUIRE_POSTGRES` is set (CI sets it).

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct PostgresServer {
    child: Child,
    pub url: String,
    data: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The directory holding `initdb` and `postgres`.
fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").exists() && bin.join("postgres").exists())
        .collect();
    found.sort();
    found.pop()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.starts_with(b"0\n"))
}

/// `program` run as the `postgres` user when we are root (the server
/// refuses to run as root).
fn command(program: PathBuf, root: bool) -> Command {
    if root {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

impl PostgresServer {
    pub fn start() -> Option<PostgresServer> {
        let Some(bin) = bin_dir() else {
            assert!(
                std::env::var_os("TOOLGATE_REQUIRE_POSTGRES").is_none(),
                "TOOLGATE_REQUIRE_POSTGRES is set but PostgreSQL is not installed"
            );
            eprintln!("PostgreSQL is not installed: skipping a shared-audit test");
            return None;
        };
        let root = is_root();
        let dir = tempfile::tempdir().unwrap();
        if root {
            let owned = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(owned.success());
        }
        let data = dir.path().join("data");
        let init = command(bin.join("initdb"), root)
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"])
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(init.success(), "initdb failed");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = command(bin.join("postgres"), root)
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
            .arg("-k")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        let began = Instant::now();
        loop {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() && query(&url, "SELECT 1").is_ok() {
                break;
            }
            assert!(
                began.elapsed() < Duration::from_secs(30),
                "postgres did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(PostgresServer {
            child,
            url,
            data,
            _dir: dir,
        })
    }

    /// Stop the server (immediate shutdown of the postmaster, whose pid
    /// heads `postmaster.pid`: the child may be `runuser`), so the store
    /// becomes unreachable.
    pub fn stop(&mut self) {
        let pid = std::fs::read_to_string(self.data.join("postmaster.pid"))
            .ok()
            .and_then(|text| text.lines().next().map(str::to_owned));
        if let Some(pid) = pid {
            let _ = Command::new("kill").args(["-QUIT", &pid]).status();
        }
        let began = Instant::now();
        while began.elapsed() < Duration::from_secs(10) {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run `sql` and return every row's columns as text. On a thread of its
/// own: the client runs its own runtime.
pub fn query(url: &str, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        let mut client =
            postgres::Client::connect(&url, postgres::NoTls).map_err(|e| e.to_string())?;
        let rows = client.simple_query(&sql).map_err(|e| e.to_string())?;
        Ok(rows
            .into_iter()
            .filter_map(|message| match message {
                postgres::SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|at| row.get(at).map(str::to_owned))
                        .collect(),
                ),
                _ => None,
            })
            .collect())
    })
    .join()
    .map_err(|_| "the query thread failed".to_owned())?
}
