//! The real upstream kubectl (/usr/bin/kubectl) run against our apiserver through a generated
//! kubeconfig, every run bounded by a timeout so a hang fails the test instead of blocking it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The upstream kubectl, the compatibility oracle.
pub const UPSTREAM_KUBECTL: &str = "/usr/bin/kubectl";

/// How long one kubectl command may run before it is killed and the test fails.
const TIMEOUT: Duration = Duration::from_secs(60);

/// What one kubectl run did.
#[derive(Debug)]
pub struct Output {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

/// kubectl with a kubeconfig (token user `e2e`, the server's certificate as CA) and its own
/// discovery cache, both in a temp dir.
pub struct Kubectl {
    binary: PathBuf,
    kubeconfig: PathBuf,
    cache_dir: PathBuf,
    dir: PathBuf,
}

impl Kubectl {
    /// The upstream kubectl talking to `server` (`https://...`), trusting `ca_file`; its files
    /// go in `dir`. Fails clearly when /usr/bin/kubectl is missing.
    pub fn upstream(dir: &Path, server: &str, ca_file: &Path) -> Self {
        assert!(
            Path::new(UPSTREAM_KUBECTL).exists(),
            "{UPSTREAM_KUBECTL} (the upstream kubectl, v1.33) is required by this test: install it"
        );
        Self::new(Path::new(UPSTREAM_KUBECTL), dir, server, ca_file)
    }

    /// The upstream kubectl talking to a test's apiserver, its files in `dir/kubectl`.
    pub fn for_apiserver(dir: &Path, server: &crate::apiserver::ApiServer) -> Self {
        Self::upstream(&dir.join("kubectl"), &server.url(), &server.ca_file())
    }

    /// `binary` talking to `server`, trusting `ca_file`.
    pub fn new(binary: &Path, dir: &Path, server: &str, ca_file: &Path) -> Self {
        std::fs::create_dir_all(dir).expect("creating the kubectl dir");
        let kubeconfig = dir.join("kubeconfig");
        write_kubeconfig(&kubeconfig, server, ca_file).expect("writing the kubeconfig");
        Self {
            binary: binary.to_path_buf(),
            kubeconfig,
            cache_dir: dir.join("cache"),
            dir: dir.to_path_buf(),
        }
    }

    /// The upstream kubectl using the kubeconfig at `kubeconfig` (a user of the test's own
    /// choosing: client certificate, token); its cache and files go in `dir`.
    pub fn upstream_with_kubeconfig(dir: &Path, kubeconfig: &Path) -> Self {
        assert!(
            Path::new(UPSTREAM_KUBECTL).exists(),
            "{UPSTREAM_KUBECTL} (the upstream kubectl, v1.33) is required by this test: install it"
        );
        std::fs::create_dir_all(dir).expect("creating the kubectl dir");
        Self {
            binary: PathBuf::from(UPSTREAM_KUBECTL),
            kubeconfig: kubeconfig.to_path_buf(),
            cache_dir: dir.join("cache"),
            dir: dir.to_path_buf(),
        }
    }

    /// The directory for files the test writes (manifests).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .arg(format!("--cache-dir={}", self.cache_dir.display()))
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &self.dir)
            .env_remove("KUBECTL_EXTERNAL_DIFF");
        command
    }

    /// Runs kubectl with `args` and `stdin`, killing it after [`TIMEOUT`].
    pub fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        self.run_full(args, stdin, &[])
    }

    /// Runs kubectl with `args` and extra environment variables.
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.run_full(args, "", env)
    }

    fn run_full(&self, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
        let mut child = self
            .command(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("running {}: {err}", self.binary.display()));
        let mut input = child.stdin.take().expect("stdin");
        let stdin = stdin.to_string();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            let _ = input.write_all(stdin.as_bytes());
        });
        let stdout = reader(child.stdout.take().expect("stdout"));
        let stderr = reader(child.stderr.take().expect("stderr"));
        let deadline = Instant::now() + TIMEOUT;
        let status = loop {
            if let Some(status) = child.try_wait().expect("waiting for kubectl") {
                break Some(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let _ = writer.join();
        let stdout = stdout.join().unwrap_or_default();
        let stderr = stderr.join().unwrap_or_default();
        let Some(status) = status else {
            panic!(
                "kubectl {} did not finish within {TIMEOUT:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                args.join(" ")
            );
        };
        Output {
            success: status.success(),
            stdout,
            stderr,
        }
    }

    /// Runs kubectl with `args`.
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with_stdin(args, "")
    }

    /// Runs kubectl with `args`, which must succeed; returns its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.success,
            "kubectl {} failed\nstdout:\n{}\nstderr:\n{}",
            args.join(" "),
            out.stdout,
            out.stderr
        );
        out.stdout
    }

    /// Runs kubectl with `args`, which must fail; returns its stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.success,
            "kubectl {} succeeded but should have failed\nstdout:\n{}",
            args.join(" "),
            out.stdout
        );
        out.stderr
    }

    /// Runs `script` with `sh -c` in `cwd` (for exit codes, stdin and TTYs), with this
    /// kubectl as `$KUBECTL` and its kubeconfig and home; under timeout(1) when `limit` (in
    /// seconds) is given, a guard for scripts that could hang. Returns the exit code (-1 when
    /// killed by a signal), stdout and stderr.
    pub fn shell(&self, cwd: &Path, script: &str, limit: Option<u32>) -> (i32, String, String) {
        let mut command = match limit {
            Some(seconds) => {
                let mut c = Command::new("timeout");
                c.arg(seconds.to_string()).arg("sh");
                c
            }
            None => Command::new("sh"),
        };
        let out = command
            .arg("-c")
            .arg(script)
            .current_dir(cwd)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECTL", &self.binary)
            .env("HOME", &self.dir)
            .output()
            .expect("running sh");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Starts kubectl in the background (e.g. `get -w`), its output going to a file.
    pub fn spawn(&self, args: &[&str]) -> Background {
        let n = std::fs::read_dir(&self.dir).map(|d| d.count()).unwrap_or(0);
        let out_path = self.dir.join(format!("background-{n}.out"));
        let err_path = self.dir.join(format!("background-{n}.err"));
        let out = std::fs::File::create(&out_path).expect("creating the output file");
        let err = std::fs::File::create(&err_path).expect("creating the error file");
        let child = self
            .command(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|err| panic!("running {}: {err}", self.binary.display()));
        Background {
            child,
            out_path,
            err_path,
            what: args.join(" "),
        }
    }
}

/// Writes a kubeconfig for `server` (`https://...`) trusting `ca_file`, with a token user
/// (`e2e`) so no client prompts for credentials.
pub fn write_kubeconfig(path: &Path, server: &str, ca_file: &Path) -> std::io::Result<()> {
    write_token_kubeconfig(path, server, ca_file, "e2e")
}

/// Writes a kubeconfig for `server` trusting `ca_file` whose user presents `token`.
pub fn write_token_kubeconfig(
    path: &Path,
    server: &str,
    ca_file: &Path,
    token: &str,
) -> std::io::Result<()> {
    let config = format!(
        "apiVersion: v1\n\
         kind: Config\n\
         clusters:\n\
         - name: e2e\n  cluster:\n    server: {server}\n    certificate-authority: {ca}\n\
         users:\n\
         - name: e2e\n  user:\n    token: {token}\n\
         contexts:\n\
         - name: e2e\n  context:\n    cluster: e2e\n    user: e2e\n\
         current-context: e2e\n",
        ca = ca_file.display()
    );
    std::fs::write(path, config)
}

fn reader(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// A kubectl running in the background, killed on drop.
pub struct Background {
    child: Child,
    out_path: PathBuf,
    err_path: PathBuf,
    what: String,
}

impl Background {
    /// What it has printed to stdout so far.
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(&self.out_path).unwrap_or_default()
    }

    /// What it has printed to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err_path).unwrap_or_default()
    }

    /// Waits until `pred` holds for its stdout; panics after `timeout` (a hang guard) or if
    /// kubectl exits first.
    pub fn wait_for(
        &mut self,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        self.wait_on(false, timeout, what, pred)
    }

    /// [`Background::wait_for`] on its stderr (e.g. the request log of `-v=6`, to know a
    /// kubectl has read an object before the test changes it).
    pub fn wait_for_stderr(
        &mut self,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        self.wait_on(true, timeout, what, pred)
    }

    fn wait_on(
        &mut self,
        stderr: bool,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        let read = |b: &Self| if stderr { b.stderr() } else { b.stdout() };
        let deadline = Instant::now() + timeout;
        loop {
            let out = read(self);
            if pred(&out) {
                return out;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                let out = read(self);
                if pred(&out) {
                    return out;
                }
                panic!(
                    "kubectl {} exited ({status}) before {what}\nstdout:\n{}\nstderr:\n{}",
                    self.what,
                    self.stdout(),
                    self.stderr()
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "kubectl {}: no {what} within {timeout:?}\nstdout:\n{}\nstderr:\n{}",
                    self.what,
                    self.stdout(),
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
