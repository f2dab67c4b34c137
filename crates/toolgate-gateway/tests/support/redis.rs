//! A real `redis-server` on a free loopback port, for the limits that
//! gateway replicas share. Without the binary the tests that need it say
//! so and return, unless `TOOLGATE_REQUIRE_REDIS` is set (CI sets it, after
//! installing the server), where its absence fails them.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    child: Child,
    pub url: String,
    _dir: tempfile::TempDir,
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

impl RedisServer {
    /// Start one; `None` (and a line on stderr) when `redis-server` is not
    /// installed and not required.
    pub fn start() -> Option<RedisServer> {
        let installed = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !installed {
            assert!(
                std::env::var_os("TOOLGATE_REQUIRE_REDIS").is_none(),
                "TOOLGATE_REQUIRE_REDIS is set but redis-server is not installed"
            );
            eprintln!("redis-server is not installed: skipping a shared-limits test");
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let began = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                began.elapsed() < Duration::from_secs(10),
                "redis-server did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(RedisServer {
            child,
            url: format!("redis://127.0.0.1:{port}"),
            _dir: dir,
        })
    }

    /// Stop the server (the counts become unreachable).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
