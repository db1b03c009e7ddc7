/* SPDX-License-Identifier: GPL-2.0 */
/*
 * veloces's tunables (queue/iosched/), declared once: one VEL_TUNABLE() line
 * each, in the order sysfs lists them. The module defines VEL_TUNABLE() and
 * includes this list where it builds its table, defaults and sysfs files
 * (veloces-iosched.c); the simulator's model of veloces builds its table from
 * it (sim/build.rs); the lab and the conformance code read it through the
 * model (`vsim list --json`). A new tunable is one line here, its field in
 * struct vel_data, and its policy code.
 *
 * VEL_TUNABLE(name, default, min, max, releases, unit, help)
 *   default   its value when the elevator starts; three follow the device
 *             (vel_init_sched): bundle_kb its optimal I/O size, else its
 *             discard granularity, when one is 64 KiB to max; write_depth its
 *             tags (no limit), at most max; bundling off on zoned devices
 *   min, max  the range a sysfs write must fall in (else -EINVAL)
 *   releases  1 where a change readies the open bundles (they were made under
 *             the old value)
 *   unit      "ms", "us", "KiB", or "" for a count or a 0/1 switch
 *   help      one line for `vsim list` and docs/kernel.md
 */
VEL_TUNABLE(read_expire, 100, 1, 600000, 0, "ms",
	    "a read's FIFO deadline")
VEL_TUNABLE(write_expire, 1000, 1, 600000, 1, "ms",
	    "a write's (and a bundle's oldest write's) deadline")
VEL_TUNABLE(fifo_batch, 16, 1, 1024, 0, "",
	    "requests per sorted batch in one direction")
VEL_TUNABLE(writes_starved, 2, 1, 1024, 0, "",
	    "read batches that may pass waiting writes")
VEL_TUNABLE(front_merges, 1, 0, 1, 0, "",
	    "also merge bios in front of queued requests")
VEL_TUNABLE(bundle_kb, 512, 4, 1048576, 1, "KiB",
	    "bundle (logical erase block) size; default from io_opt or discard granularity")
VEL_TUNABLE(bundle_expire_us, 2000, 1, 10000000, 0, "us",
	    "a bundle is ready this long after it opened")
VEL_TUNABLE(bundling, 1, 0, 1, 1, "",
	    "hold async writes in erase-block bundles (off on zoned devices)")
VEL_TUNABLE(write_depth, 65536, 1, 65536, 0, "",
	    "fewest driver tags writes keep while reads are active; default all, at most max")
VEL_TUNABLE(write_backlog_us, 2000, 0, 1000000, 0, "us",
	    "if writes slow reads by more, writes on the device at most this long's worth")
VEL_TUNABLE(async_depth, 0, 0, 65536, 0, "",
	    "scheduler tags writes (not a reader's own) and async reads may take; 0: half")
VEL_TUNABLE(anticipate_us, 2000, 0, 1000000, 0, "us",
	    "writes no one waits on keep a reader's last tag this long after its read; 0: off")
VEL_TUNABLE(hold_idle, 0, 0, 1, 0, "",
	    "1: hold bundles while a tag is free; 0: an idle tag takes the oldest")
VEL_TUNABLE(prio_aging_expire, 10000, 0, 3600000, 0, "ms",
	    "a lower class's oldest request waiting this long goes before higher classes")
VEL_TUNABLE(read_active_us, 10000, 1, 10000000, 0, "us",
	    "reads count as active, and a task as a reader, this long after one")

#undef VEL_TUNABLE
