//! The scheduler slice a thread asks the kernel for.
//!
//! Linux's fair scheduler (EEVDF, from 6.6) gives each runnable thread a
//! slice, by default 0.7 ms times 1 + log2(cores) (1.4 ms on 2 cores), and
//! a deadline one slice ahead. From 6.12 a thread may ask for a shorter
//! slice with `sched_setattr(2)` (`sched_runtime`, clamped by the kernel to
//! [`MIN`]..=[`MAX`]): woken, it gets an earlier deadline and preempts a
//! thread running a longer slice, instead of waiting for that slice to end.
//! A gateway's request threads wake, work a few tens of microseconds and
//! sleep again; `toolgate serve` asks for the shortest slice for them, and
//! its background indexer gives it back.
//!
//! No privilege is needed: the nice value and the policy stay as they are.
//! Threads started afterwards inherit the slice of the thread that starts
//! them. Kernels before 6.12 take the call and ignore the slice.

use std::io;
use std::time::Duration;

/// The shortest slice the kernel grants.
pub const MIN: Duration = Duration::from_micros(100);
/// The longest slice the kernel grants.
pub const MAX: Duration = Duration::from_millis(100);

/// Ask for `slice` (clamped by the kernel to [`MIN`]..=[`MAX`]) for the
/// calling thread and the threads it starts afterwards; `None` gives back
/// the kernel's default. False, and nothing changed, when the thread runs
/// under a policy other than the fair scheduler's (`SCHED_OTHER`,
/// `SCHED_BATCH`): a real-time or idle thread is left as its operator set
/// it.
pub fn set_slice(slice: Option<Duration>) -> io::Result<bool> {
    imp::set_slice(slice)
}

/// The slice the calling thread runs with (the kernel's default or the one
/// asked for), when the kernel tells it (6.6 and later) and the thread runs
/// under the fair scheduler.
pub fn slice() -> io::Result<Option<Duration>> {
    imp::slice()
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::time::Duration;

    /// `struct sched_attr` of `<linux/sched/types.h>`, its second version
    /// (`SCHED_ATTR_SIZE_VER1`, 56 bytes).
    #[repr(C)]
    #[derive(Default)]
    struct SchedAttr {
        size: u32,
        policy: u32,
        flags: u64,
        nice: i32,
        priority: u32,
        runtime: u64,
        deadline: u64,
        period: u64,
        util_min: u32,
        util_max: u32,
    }

    const SIZE: u32 = 56;
    const _: () = assert!(std::mem::size_of::<SchedAttr>() == SIZE as usize);
    const SCHED_OTHER: u32 = 0;
    const SCHED_BATCH: u32 = 3;
    const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;

    fn get() -> io::Result<SchedAttr> {
        let mut attr = SchedAttr::default();
        // SAFETY: `attr` is a `struct sched_attr` of `SIZE` bytes, owned by
        // this frame, that the kernel fills for the calling thread (pid 0);
        // the kernel writes at most `SIZE` bytes.
        #[allow(unsafe_code)]
        let done = unsafe {
            libc::syscall(
                libc::SYS_sched_getattr,
                0,
                std::ptr::from_mut(&mut attr),
                SIZE,
                0,
            )
        };
        if done == 0 {
            Ok(attr)
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn set(attr: &SchedAttr) -> io::Result<()> {
        // SAFETY: `attr` is a whole `struct sched_attr` whose `size` says
        // `SIZE` bytes; the kernel only reads it, for the calling thread.
        #[allow(unsafe_code)]
        let done =
            unsafe { libc::syscall(libc::SYS_sched_setattr, 0, std::ptr::from_ref(attr), 0) };
        if done == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn fair(attr: &SchedAttr) -> bool {
        matches!(attr.policy, SCHED_OTHER | SCHED_BATCH)
    }

    pub(super) fn set_slice(slice: Option<Duration>) -> io::Result<bool> {
        let current = get()?;
        if !fair(&current) {
            return Ok(false);
        }
        let runtime = slice.map_or(0, |slice| {
            u64::try_from(slice.clamp(super::MIN, super::MAX).as_nanos()).unwrap_or(u64::MAX)
        });
        set(&SchedAttr {
            size: SIZE,
            policy: current.policy,
            // The utilisation clamps are left as they are (no clamp flag).
            flags: current.flags & SCHED_FLAG_RESET_ON_FORK,
            nice: current.nice,
            runtime,
            ..SchedAttr::default()
        })?;
        Ok(true)
    }

    pub(super) fn slice() -> io::Result<Option<Duration>> {
        let current = get()?;
        Ok((fair(&current) && current.runtime > 0).then(|| Duration::from_nanos(current.runtime)))
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;
    use std::time::Duration;

    pub(super) fn set_slice(_: Option<Duration>) -> io::Result<bool> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "a scheduler slice is asked for on Linux only",
        ))
    }

    pub(super) fn slice() -> io::Result<Option<Duration>> {
        Ok(None)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// On its own thread: the default slice, a short one asked for (and
    /// inherited by a thread started after), the default given back; the
    /// nice value untouched throughout.
    #[test]
    fn a_thread_asks_for_a_short_slice_and_gives_it_back() {
        std::thread::spawn(|| {
            let Some(default) = slice().unwrap() else {
                eprintln!("this kernel does not tell a thread's slice");
                return;
            };
            rustix::process::setpriority_process(None, 3).unwrap();
            assert!(set_slice(Some(Duration::from_micros(1))).unwrap());
            let asked = slice().unwrap().unwrap();
            assert_eq!(rustix::process::getpriority_process(None).unwrap(), 3);
            if asked == default {
                eprintln!("this kernel ignores a thread's slice (before 6.12)");
                return;
            }
            assert_eq!(asked, MIN, "clamped to the kernel's shortest");
            let inherited = std::thread::spawn(|| slice().unwrap()).join().unwrap();
            assert_eq!(inherited, Some(MIN));

            assert!(set_slice(Some(Duration::from_millis(3))).unwrap());
            assert_eq!(slice().unwrap(), Some(Duration::from_millis(3)));
            assert!(set_slice(None).unwrap());
            assert_eq!(slice().unwrap(), Some(default));
            assert_eq!(rustix::process::getpriority_process(None).unwrap(), 3);
        })
        .join()
        .unwrap();
    }
}
