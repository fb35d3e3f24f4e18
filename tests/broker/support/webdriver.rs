//! A real Chromium driven through ChromeDriver over the W3C WebDriver protocol: plain JSON
//! over HTTP, spoken with the `reqwest` client the tests already use.
//!
//! `Browser::start` runs `chromedriver` on a free loopback port and opens one headless
//! Chromium session with a fresh profile; dropping the browser ends the session and the
//! driver. Chromium runs with the flags a closed network and a root user need.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The key under which WebDriver returns an element reference.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long a page gets to show what a test waits for (the console refreshes every 2 s).
pub const PAGE_TIMEOUT: Duration = Duration::from_secs(20);

/// One Chromium session.
pub struct Browser {
    http: reqwest::Client,
    session: String,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts ChromeDriver and a headless Chromium; fails with what to install when absent.
    pub async fn start() -> Browser {
        let driver_bin = find(&["chromedriver"], &["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"])
            .unwrap_or_else(|| panic!("chromedriver is not installed: the console's browser tests need \
                Chromium and ChromeDriver (on Debian: apt-get install chromium chromium-driver; .ci/run installs them)"));
        let chromium = find(&["chromium", "chromium-browser"], &["/usr/bin/chromium"])
            .unwrap_or_else(|| {
                panic!("chromium is not installed: apt-get install chromium chromium-driver")
            });
        let port = super::free_port();
        let driver = Command::new(&driver_bin)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", driver_bin.display()));
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("http client");
        let ready = super::eventually(Duration::from_secs(20), || async {
            let r = http.get(format!("{base}/status")).send().await.ok()?;
            let v: Value = r.json().await.ok()?;
            v["value"]["ready"].as_bool().filter(|r| *r)
        })
        .await;
        assert!(
            ready.is_some(),
            "chromedriver did not become ready on {base}"
        );
        let profile = tempfile::tempdir().expect("a profile folder");
        let args = [
            "--headless=new".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--window-size=1360,900".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let created = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .expect("chromedriver answers");
        let body: Value = created.json().await.expect("a JSON answer");
        let session = body["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("chromium did not start: {body}"))
            .to_owned();
        Browser {
            http,
            session: format!("{base}/session/{session}"),
            driver,
            _profile: profile,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        self.try_call(method, path, body)
            .await
            .unwrap_or_else(|error| panic!("webdriver {path}: {error}"))
    }

    /// One WebDriver command; `Err` carries the driver's error and message.
    async fn try_call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        let mut req = self.http.request(method, format!("{}{path}", self.session));
        if let Some(body) = body {
            req = req.json(&body);
        }
        let answer: Value = req
            .send()
            .await
            .expect("chromedriver answers")
            .json()
            .await
            .expect("a JSON answer");
        match answer["value"]["error"].as_str() {
            Some(error) => Err(format!("{error}: {}", answer["value"]["message"])),
            None => Ok(answer["value"].clone()),
        }
    }

    /// Opens a URL.
    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
    }

    /// Runs a script in the page (`arguments[0..]` are `args`) and returns its value.
    pub async fn script(&self, script: &str, args: Value) -> Value {
        let body = json!({ "script": script, "args": args });
        self.call(reqwest::Method::POST, "/execute/sync", Some(body))
            .await
    }

    /// The first element matching a CSS selector (its WebDriver reference).
    async fn element(&self, css: &str) -> String {
        let body = json!({ "using": "css selector", "value": css });
        let found = self
            .call(reqwest::Method::POST, "/element", Some(body))
            .await;
        found[ELEMENT_KEY]
            .as_str()
            .expect("an element reference")
            .to_owned()
    }

    /// Clicks the element matching `css` (as a person would: it must be visible). The
    /// console redraws its tables every refresh, so an element gone stale between finding
    /// and clicking is found again.
    pub async fn click(&self, css: &str) {
        let deadline = Instant::now() + PAGE_TIMEOUT;
        loop {
            self.wait_for(css).await;
            let id = self.element(css).await;
            let path = format!("/element/{id}/click");
            match self
                .try_call(reqwest::Method::POST, &path, Some(json!({})))
                .await
            {
                Ok(_) => return,
                Err(error) if error.starts_with("stale element") && Instant::now() < deadline => {}
                Err(error) => panic!("click {css}: {error}"),
            }
        }
    }

    /// Replaces the text of the input matching `css`.
    pub async fn type_into(&self, css: &str, text: &str) {
        self.wait_for(css).await;
        let id = self.element(css).await;
        let clear = format!("/element/{id}/clear");
        self.call(reqwest::Method::POST, &clear, Some(json!({})))
            .await;
        let value = format!("/element/{id}/value");
        self.call(reqwest::Method::POST, &value, Some(json!({ "text": text })))
            .await;
    }

    /// Waits until an element matches `css`.
    pub async fn wait_for(&self, css: &str) {
        self.text_when(css, |_| true).await;
    }

    /// Waits until the text of the element matching `css` satisfies `ok`; returns it.
    pub async fn text_when(&self, css: &str, ok: impl Fn(&str) -> bool) -> String {
        let script =
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;";
        let deadline = Instant::now() + PAGE_TIMEOUT;
        let mut last = Value::Null;
        while Instant::now() < deadline {
            last = self.script(script, json!([css])).await;
            if let Some(text) = last.as_str().filter(|t| ok(t)) {
                return text.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{css} did not show what was expected within {PAGE_TIMEOUT:?}; last: {last}");
    }

    /// Saves a PNG screenshot of the window to `dir/name.png` and returns its path.
    pub async fn screenshot(&self, dir: &Path, name: &str) -> PathBuf {
        let encoded = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64_decode(encoded.as_str().expect("a base64 screenshot"));
        assert!(png.starts_with(b"\x89PNG"), "the screenshot is a PNG");
        std::fs::create_dir_all(dir).expect("create the screenshot folder");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write the screenshot");
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ending the session closes Chromium (killing the driver alone would leave it
        // running); plain blocking HTTP, as Drop cannot await.
        end_session(&self.session);
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// `DELETE {session}` over a plain socket, waiting for the answer (a few seconds at most).
fn end_session(session: &str) {
    use std::io::{Read, Write};
    let Some(rest) = session.strip_prefix("http://") else {
        return;
    };
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let Ok(mut stream) = std::net::TcpStream::connect(host) else {
        return;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let request = format!(
        "DELETE {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).is_ok() {
        let _ = stream.read_to_end(&mut Vec::new());
    }
}

/// A program on the PATH by one of `names`, or at one of `paths`.
fn find(names: &[&str], paths: &[&str]) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").into_iter().flat_map(|p| {
        std::env::split_paths(&p)
            .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
            .collect::<Vec<_>>()
    });
    on_path
        .chain(paths.iter().map(PathBuf::from))
        .find(|p| p.is_file())
}

/// Standard base64 (the screenshot's encoding).
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let digits: Vec<u32> = text.bytes().filter_map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, d)| acc | d << (18 - 6 * i));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len().saturating_sub(1)]);
    }
    out
}
