//! nbdkit plugin: a vsim device model as an NBD export, each request
//! completed when the model says (times the dilation), with real data.
//!
//! ```text
//! nbdkit --unix SOCK target/release/libvsim_nbdkit.so \
//!     device=cheapflash:preset=sd_a1,size=1g dilation=50 \
//!     counters=/tmp/counters.json info=/tmp/info.json
//! ```
//!
//! Keys: `device` (required: a vsim device spec), `dilation` (wall time per
//! unit of model time, default 1), `seed`, `backing` (a file for the data;
//! default memory), `counters` (JSON written every `counters_ms`, default
//! 500, and at exit), `control` (a file holding the dilation to serve at
//! from then on, followed while serving; needs `counters`), `info` (JSON
//! with size, queue depth and geometry, written once the model is built).
//! The core is `vsim::serve`.

use nbdkit::*;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use vsim::serve::{CounterWriter, Options, Served};

struct Config {
    device: Option<String>,
    dilation: f64,
    seed: u64,
    backing: Option<PathBuf>,
    counters: Option<PathBuf>,
    counters_ms: u64,
    control: Option<PathBuf>,
    info: Option<PathBuf>,
}

static CONFIG: Mutex<Config> = Mutex::new(Config {
    device: None,
    dilation: 1.0,
    seed: 1,
    backing: None,
    counters: None,
    counters_ms: 500,
    control: None,
    info: None,
});
static SERVED: OnceLock<Arc<Served>> = OnceLock::new();
static WRITER: Mutex<Option<CounterWriter>> = Mutex::new(None);

fn einval(msg: String) -> Error {
    Error::new(libc::EINVAL, msg)
}

fn eio(e: vsim::serve::Error) -> Error {
    if let Some(s) = SERVED.get() {
        s.count_error();
    }
    Error::new(libc::EIO, format!("{e:#}"))
}

fn served() -> Result<&'static Arc<Served>> {
    SERVED
        .get()
        .ok_or_else(|| Error::new(libc::EIO, "the device model is not built"))
}

fn parse_num<T: std::str::FromStr>(key: &str, v: &str) -> Result<T> {
    v.parse()
        .map_err(|_| einval(format!("{key}={v}: not a number")))
}

#[derive(Default)]
struct Handle {
    _open: bool,
}

impl Server for Handle {
    fn name() -> &'static str {
        "vsim"
    }

    fn description() -> Option<&'static str> {
        Some("a vsim device model (ssd, cheapflash, hdd, fixed) timed by the model")
    }

    fn config_help() -> Option<&'static str> {
        Some(
            "device=MODEL:k=v,...  (required) vsim device spec, e.g. ssd:preset=tlc_nvme,size=2g\n\
             dilation=F            wall time per unit of model time (default 1)\n\
             seed=N                model seed (default 1)\n\
             backing=FILE          keep the data in FILE (default: memory)\n\
             counters=FILE         write the live counters (JSON) there\n\
             counters_ms=N         how often (default 500)\n\
             control=FILE          follow the dilation FILE holds (needs counters)\n\
             info=FILE             write size, depth and geometry (JSON) there",
        )
    }

    fn config(key: &str, v: &str) -> Result<()> {
        let mut c = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
        match key {
            "device" => c.device = Some(v.to_string()),
            "dilation" => c.dilation = parse_num(key, v)?,
            "seed" => c.seed = parse_num(key, v)?,
            "counters_ms" => c.counters_ms = parse_num::<u64>(key, v)?.max(1),
            "backing" => c.backing = Some(v.into()),
            "counters" => c.counters = Some(v.into()),
            "control" => c.control = Some(v.into()),
            "info" => c.info = Some(v.into()),
            _ => return Err(einval(format!("unknown key {key}: see nbdkit vsim --help"))),
        }
        Ok(())
    }

    fn config_complete() -> Result<()> {
        let c = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
        let Some(device) = c.device.clone() else {
            return Err(einval("device=MODEL:options is required".into()));
        };
        if c.control.is_some() && c.counters.is_none() {
            return Err(einval(
                "control=FILE needs counters=FILE (they show the dilation in effect)".into(),
            ));
        }
        let s = Served::new(&Options {
            device,
            dilation: c.dilation,
            seed: c.seed,
            backing: c.backing.clone(),
        })
        .map_err(|e| einval(format!("{e:#}")))?;
        if let Some(p) = &c.info {
            let text = serde_json::to_string_pretty(&s.info_json()).unwrap_or_default() + "\n";
            std::fs::write(p, text)
                .map_err(|e| einval(format!("cannot write {}: {e}", p.display())))?;
        }
        let _ = SERVED.set(Arc::new(s));
        Ok(())
    }

    /// Threads start here: nbdkit may have forked into the background.
    fn after_fork() -> Result<()> {
        let c = CONFIG.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = &c.counters {
            let s = served()?.clone();
            let period = Duration::from_millis(c.counters_ms);
            let w = CounterWriter::start(s, p.clone(), period, c.control.clone());
            *WRITER.lock().unwrap_or_else(|e| e.into_inner()) = Some(w);
        }
        Ok(())
    }

    fn unload() {
        // The last counters, after every request.
        drop(WRITER.lock().unwrap_or_else(|e| e.into_inner()).take());
    }

    fn thread_model() -> Result<ThreadModel> {
        Ok(ThreadModel::Parallel)
    }

    fn open(_readonly: bool) -> Result<Box<dyn Server>> {
        served()?;
        Ok(Box::<Handle>::default())
    }

    fn get_size(&self) -> Result<i64> {
        Ok(served()?.size_bytes() as i64)
    }

    fn is_rotational(&self) -> Result<bool> {
        Ok(served()?.info().rotational)
    }

    fn can_multi_conn(&self) -> Result<bool> {
        Ok(true)
    }

    fn can_flush(&self) -> Result<bool> {
        Ok(true)
    }

    fn can_fua(&self) -> Result<FuaFlags> {
        Ok(FuaFlags::Native)
    }

    fn can_trim(&self) -> Result<bool> {
        Ok(served()?.supports_discard())
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        served()?.read(buf, offset).map(drop).map_err(eio)
    }

    fn write_at(&self, buf: &[u8], offset: u64, flags: Flags) -> Result<()> {
        served()?
            .write(buf, offset, flags.contains(Flags::FUA))
            .map(drop)
            .map_err(eio)
    }

    fn flush(&self) -> Result<()> {
        served()?.flush().map(drop).map_err(eio)
    }

    fn trim(&self, count: u32, offset: u64, flags: Flags) -> Result<()> {
        let s = served()?;
        s.discard(offset, count as u64).map_err(eio)?;
        if flags.contains(Flags::FUA) {
            s.flush().map_err(eio)?;
        }
        Ok(())
    }
}

plugin!(Handle {
    after_fork,
    config_help,
    config,
    config_complete,
    unload,
    thread_model,
    is_rotational,
    can_multi_conn,
    can_flush,
    can_fua,
    can_trim,
    write_at,
    flush,
    trim
});
