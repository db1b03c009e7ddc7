// SPDX-License-Identifier: GPL-2.0
/*
 * Veloces: a flash-aware blk-mq I/O scheduler.
 *
 * Policy (see docs/policy.md; the implementation: docs/kernel.md):
 *  - Reads are preferred. Reads and dispatchable writes each have a FIFO
 *    (arrival order, with an expiry time) and a sector-sorted tree; requests
 *    are dispatched in sector order within a batch of fifo_batch requests.
 *  - Asynchronous data writes are bundled by logical erase block
 *    (sector / (bundle_kb * 2)). A bundle opens with its first write and is
 *    ready when bundle_expire_us has passed since it opened, when it holds an
 *    erase block's worth of sectors, or when its oldest write reaches
 *    write_expire. Ready bundles are dispatched in sector order, oldest first,
 *    back to back, so the device sees each erase block's writes together;
 *    after every fifo_batch of a bundle's writes, queued reads get one batch.
 *  - Held bundles do not idle the device: when a token is free and nothing
 *    else may go (no read, no dispatchable write, no anticipation, writes
 *    within their share), the oldest held bundle goes at once (hold_idle=0,
 *    the default; 1 holds them until they are ready whatever the device does).
 *  - A write that spans an erase-block boundary is never held: no bundle
 *    could hold it and stay within one erase block.
 *  - Synchronous writes (REQ_SYNC, REQ_FUA, REQ_PREFLUSH) are never held, and
 *    a task that waits on writeback of the disk releases every held bundle.
 *  - A reader's own writes: a write inserted by a task (not a kernel thread)
 *    that inserted a read less than read_active_us (10 ms) before is never
 *    held, counts as a write someone waits on (no anticipation against it)
 *    and is not limited to async_depth of the scheduler tags; where reads
 *    beside writes take over twice the fastest read's time on the device,
 *    waiting reads do not end a batch of such writes either.
 *  - While reads wait, writes go only after writes_starved read batches, or
 *    when a write or a bundle has expired.
 *  - Back merges and (with front_merges) front merges; never a merge that
 *    mixes held and unheld requests or crosses a bundle's erase block.
 *  - Anticipation: when the next write would take the device's last free
 *    tag, no one waits on the writes queued (no sync write, no expired
 *    write, no bundle a sync write or a writeback waiter released), and a
 *    reader whose reads come back within anticipate_us on average (each
 *    gap counted as at most twice that; quick until three gaps are in the
 *    mean) is about (a read queued or on the device, or one completed less
 *    than anticipate_us ago), writes wait: the reader's next read goes
 *    first, whatever writes_starved says. The reader's turn lasts as long
 *    as the writes' last turn did (from the write that ended the previous
 *    turn until no write was on the device), at most write_expire; then a
 *    write goes. Before the first write no turn is known: it goes, and sets
 *    the length of the first. On a depth-1 card under writeback the reader
 *    and the writes share the device's time about equally, as bfq's idling
 *    does.
 *  - Anticipation, the write share and the write backlog respect the I/O
 *    priority classes: the reader they protect is the highest class whose
 *    reads are about (each class's reads queued, on the device, or seen
 *    lately), and writes wait for it only when the highest class with
 *    writes to go is no higher than that reader's. An RT write never waits
 *    for a BE or IDLE reader, nor a BE write for an IDLE one; a BE write
 *    still waits for an RT or BE reader.
 *  - Requests are chosen when the device can take them: one token per
 *    request the device holds; without a token, dispatch waits on the token
 *    pool (as kyber waits on its domain tokens). has_work is true only when
 *    something can go now; a timer owns the held bundles.
 *  - Requests inserted at the head and requeued requests go first, before
 *    the rest of a bundle being drained; they are never held. On 6.12 at
 *    the head come a flush sequence's data after its preflush (data that
 *    needs only a postflush comes as an ordinary sync write) and every
 *    requeue. On 6.1 no flush sequence's request reaches the scheduler
 *    (blk_mq_sched_bypass_insert() sends RQF_FLUSH_SEQ and passthrough
 *    requests to the hardware queue's dispatch list): its at-head inserts
 *    are requeues (blk_mq_requeue_work()). Requeues go first, in the order
 *    they were requeued, then at-head inserts.
 *  - Bundling is off on zoned devices (zone write plugging keeps one write per
 *    zone in flight, so holding writes would serialise them).
 *  - I/O priority classes, as mq-deadline: each class (RT, BE, IDLE) has its
 *    own FIFOs, sort trees and batches; the highest class with something to
 *    dispatch goes first, unless a lower class has a request that waited
 *    prio_aging_expire: that request alone then goes (a bundle's writes
 *    each by their own age, draining or ready), as mq-deadline lets only
 *    aged requests pass. Only BE (and unset) async writes are held; bundles
 *    are BE's.
 */
#include <linux/kernel.h>
#include <linux/blkdev.h>
#include <linux/bio.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/init.h>
#include <linux/compiler.h>
#include <linux/rbtree.h>
#include <linux/hashtable.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/sbitmap.h>
#include <linux/rculist.h>
#include <linux/tracepoint.h>
#include <linux/pagemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/ioprio.h>

#include <trace/events/block.h>
#include <trace/events/writeback.h>

#include "elevator.h"
#include "blk.h"
#include "blk-mq.h"
#include "blk-mq-debugfs.h"
#include "blk-mq-sched.h"
#include "blk-wbt.h"

#include "veloces-compat.h"

/* Read submitters remembered (vel_note_reader). */
#define VEL_READERS		8
/* The think time's weight (of 256) above which its mean counts: three gaps. */
#define VEL_THINK_TRUSTED	80
/* The fewest writes write_backlog_us leaves on the device (two keep it busy). */
#define VEL_BACKLOG_MIN		2

#define VEL_BUNDLE_HASH_BITS	10

enum vel_dir {
	VEL_READ = READ,
	VEL_WRITE = WRITE,
};

/* I/O priority classes, highest first; IOPRIO_CLASS_NONE is BE. */
enum vel_prio {
	VEL_RT,
	VEL_BE,
	VEL_IDLE,
	VEL_CLASS_NR,
};

enum vel_close {
	VEL_CLOSE_TIME,		/* bundle_expire_us since it opened */
	VEL_CLOSE_SIZE,		/* a full erase block */
	VEL_CLOSE_EXPIRE,	/* oldest write reached write_expire */
	VEL_CLOSE_SYNC,		/* a synchronous write was merged into it */
	VEL_CLOSE_WAITER,	/* a task waits on writeback of this disk */
	VEL_CLOSE_RETUNE,	/* bundle_kb or bundling changed */
	VEL_CLOSE_MERGED,	/* emptied by merges before it was ready */
	VEL_CLOSE_IDLE,		/* a free token and nothing else to send */
	VEL_CLOSE_NR,
};

struct vel_stats {
	u64 queued[2];		/* requests inserted (not merged at insert) */
	u64 dispatched[2];
	u64 merged[2];		/* bios and requests merged into queued ones */
	u64 absorbed[2];	/* queued requests that merged into another */
	u64 expired[2];		/* dispatches that started from an expired FIFO head */
	u64 requeued;		/* requests inserted again after a dispatch */
	u64 at_head;		/* requests inserted at the head */
	u64 bundles_opened;
	u64 bundles_closed[VEL_CLOSE_NR];
	u64 bundled_writes;	/* writes dispatched as part of a bundle */
	u64 spanning;		/* async writes not held: they cross a block */
	u64 starved;		/* write batches forced by writes_starved */
	u64 deferred;		/* times dispatch waited for a free token */
	u64 capped;		/* times writes waited for write_depth */
	u64 runs;		/* dispatch_request calls */
	u64 runs_empty;		/* ... that handed out nothing */
	u64 waiters;		/* writeback waits that released bundles */
	u64 class_dispatched[VEL_CLASS_NR];
	u64 aged;		/* dispatches of a lower class for its age */
	u64 anticipated;	/* times writes waited for a reader's turn */
	u64 turns;		/* reader's turns that a write ended */
	u64 own_writes;		/* writes queued as a reader's own */
};

/* A task that submitted a read, and when it last did (0: an empty slot). */
struct vel_reader {
	pid_t pid;
	u64 ns;
};

/* Async writes to one logical erase block, held until the bundle is ready. */
struct vel_bundle {
	struct hlist_node hash;		/* vel_data.bundles, keyed by block */
	struct list_head open;		/* vel_data.open while it waits */
	struct rb_node ready_node;	/* vel_data.ready once ready */
	struct list_head rqs;		/* requests, sorted by sector */
	u64 seq;			/* opening order */
	u64 block;
	sector_t start, end;		/* the erase block: [start, end) */
	u64 opened_ns;
	u64 expire_ns;			/* its oldest write's write_expire */
	unsigned int sectors;
	unsigned int nr_rqs;
	int forced;			/* a reason to go now (sync, waiter, retune), or -1 */
	int why;			/* why it became ready, or -1 */
	bool ready;			/* in vel_data.ready, counted in nr_ready */
};

/*
 * One priority class's queues: reads and dispatchable writes each have a
 * FIFO (by expiry) and a sector-sorted tree; a batch continues at next_rq.
 */
struct vel_class {
	struct list_head fifo[2];
	struct rb_root sort[2];
	struct request *next_rq[2];	/* next in sector order in a batch */
	unsigned int batching;
	unsigned int starved;
	enum vel_dir last_dir;
};

/*
 * Locking. vd->lock serialises insert, dispatch, merges, the timer's arming,
 * sysfs stores and debugfs's lists; every field is written under it, except:
 *   kick, release_all   set without it (timer, writeback probe) before a
 *                       queue run, cleared by dispatch under it;
 *   write_waits         set under it, cleared by finish_request (and by
 *                       insert, under it); set and finish_request pair
 *                       through smp_mb() (vel_write_room);
 *   inflight,           atomics: dispatch increments, finish decrements;
 *   reads_on
 *   last_read_ns        written by insert and by finish_request (before
 *                       it drops reads_on: smp_mb__before_atomic(), read
 *                       after reads_on behind smp_rmb(), vel_read_class);
 *   read_done_ns,       written by finish_request;
 *   write_done_ns,
 *   write_left, write_gap_ns,
 *   read_wait_ns, read_fast_ns
 *   antic_waits         set under it (vel_anticipate, before it counts the
 *                       reads on the device: smp_mb()), cleared by insert
 *                       and dispatch; finish_request of a read runs the
 *                       queue if set;
 *   sched_depth/shift   written by depth_updated, read by limit_depth;
 *   tokens, token_wait  the sbitmap's and its wait queue's own locking;
 *   timer               the hrtimer's own; timer_when is under vd->lock;
 *   instances           vel_instances_lock, read under RCU by the probe;
 *   q, device_depth     fixed for the elevator's life.
 * Read without it, always with READ_ONCE (and written with WRITE_ONCE):
 * kick, release_all, write_waits, antic_waits, last_read_ns, read_done_ns,
 * write_done_ns, write_left, write_gap_ns, read_wait_ns, read_fast_ns (two
 * completions at once may each update a mean or the minimum from the same
 * old one: one sample lost), nr_open (the probe), and
 * draining, nr_ready and the FIFOs' and dispatch list's emptiness (has_work,
 * through vel_dispatchable()), async_depth, sched_depth/shift and the
 * readers table (limit_depth: vel_reader). A stale lockless read costs at most a queue run: every
 * change that makes work runs the queue afterwards. The statistics are
 * under vd->lock, and debugfs copies them under it.
 */
struct vel_data {
	spinlock_t lock;		/* see "Locking" above */
	struct request_queue *q;
	struct list_head instances;	/* vel_instances, for the writeback probe */

	struct list_head requeued;	/* requeues, in requeue order */
	struct list_head dispatch;	/* at-head inserts */
	atomic_t requeue_seq;		/* the last requeue's place */
	struct vel_class cls[VEL_CLASS_NR];
	struct rb_root held_sort;	/* bundled writes, for front merges */
	struct request *inserting;	/* the request being inserted */

	/*
	 * The open set: bundles that wait, oldest first, and those ready to
	 * go, by opening order. A bundle that waits becomes ready by time or
	 * by its oldest write's expiry no later than any younger one (both are
	 * fixed at opening, and write_expire changes release every bundle),
	 * so only the head of the waiting list is ever due: insert, the timer
	 * and dispatch are O(log n) in the open bundles.
	 */
	DECLARE_HASHTABLE(bundles, VEL_BUNDLE_HASH_BITS);
	struct list_head open;
	struct rb_root_cached ready;
	u64 seq;
	unsigned int nr_open;
	unsigned int nr_ready;		/* open bundles that may go now */
	unsigned int nr_held;
	struct vel_bundle *draining;	/* bundle being dispatched */
	/* Its writes since it started, or since reads last interrupted it. */
	unsigned int drain_run;
	bool drain_yield;		/* a read batch interrupts it */

	/* Something to look at even though no request arrived: timer, waiter. */
	bool kick;
	bool release_all;		/* a writeback waiter: release every bundle */

	struct hrtimer timer;
	u64 timer_when;

	/* One token per request the device may hold; see vel_get_token(). */
	struct sbitmap_queue tokens;
	struct sbq_wait token_wait;
	struct sbq_wait_state *token_ws;
	atomic_t wait_index;

	/*
	 * Requests on the device by direction, reads on it by class, and each
	 * class's last sign of a reader (a read inserted or completed).
	 */
	atomic_t inflight[2];
	atomic_t reads_on[VEL_CLASS_NR];
	u64 last_read_ns[VEL_CLASS_NR];
	/* Most reads on the device in this read_active_us window and the last. */
	unsigned int read_peak, read_peak_prev;
	u64 read_peak_ns;
	/* A write waits for its share: the next write completion runs the queue. */
	bool write_waits;
	/*
	 * Anticipation (vel_anticipate): the last read completion, the think
	 * time (vel_think: a decaying sum of the gaps from a completion to the
	 * next read, each at most twice the window, and its weight of 256),
	 * when the reader's turn began (0: none), the write turn that ended the
	 * last one (from its first write to no write on the device; 0: no write
	 * yet), when it was due to end, and the sync writes queued (never held
	 * for a reader).
	 */
	u64 read_done_ns;
	u64 think_total;
	unsigned int think_samples;
	u64 turn_ns;
	u64 write_turn_ns;
	u64 write_turn_len;
	u64 antic_until;
	bool antic_waits;		/* a read completion runs the queue */
	/*
	 * The last write completion (with no write on the device, the end of
	 * the writes' turn: vel_write_turn) and whether it left writes on the
	 * device; the device's pace at writing (vel_write_backlog): the mean gap
	 * between write completions while writes were on it; the mean time on
	 * the device of a read that completed beside writes (1/8 a sample; 0:
	 * none yet); and the shortest time there of any read (0: none yet).
	 */
	u64 write_done_ns;
	bool write_left;
	u64 write_gap_ns;
	u64 read_wait_ns;
	u64 read_fast_ns;
	unsigned int sync_writes;
	/* The last read submitters, most recent first (vel_note_reader). */
	struct vel_reader readers[VEL_READERS];
	unsigned int device_depth;
	/* The scheduler tags' depth and word shift (vel_depth_updated). */
	unsigned int sched_depth;
	unsigned int sched_shift;

	struct vel_stats stats;

	/* tunables, in their sysfs units (veloces-tunables.h) */
	int read_expire;		/* ms */
	int write_expire;		/* ms */
	int fifo_batch;
	int writes_starved;
	int front_merges;
	int bundle_kb;
	int bundle_expire_us;
	int bundling;
	int write_depth;		/* writes' tags while reads are active, at least */
	int write_backlog_us;		/* writes on the device while reading; 0: off */
	int async_depth;		/* scheduler tags writes may take; 0: 1/2 */
	int anticipate_us;
	int hold_idle;			/* 0: a free token takes a held bundle */
	int prio_aging_expire;		/* ms */
	int read_active_us;		/* vel_read_active_ns() */
};

/*
 * A tunable (veloces-tunables.h): its default, its range, where it lives, and
 * what changing it does.
 */
struct vel_tunable {
	int def;
	int min;
	int max;
	size_t offset;			/* of the int in struct vel_data */
	/* Open bundles were made under the old value: let them go now. */
	bool releases_bundles;
};

enum vel_tunable_id {
#define VEL_TUNABLE(name, ...) VEL_T_##name,
#include "veloces-tunables.h"
	VEL_T_NR,
};

static const struct vel_tunable vel_tunables[VEL_T_NR] = {
#define VEL_TUNABLE(name, d, lo, hi, rel, ...)				\
	[VEL_T_##name] = {						\
		.def = (d), .min = (lo), .max = (hi),			\
		.offset = offsetof(struct vel_data, name),		\
		.releases_bundles = (rel),				\
	},
#include "veloces-tunables.h"
};

static int *vel_field(struct vel_data *vd, const struct vel_tunable *t)
{
	return (int *)((char *)vd + t->offset);
}

/*
 * Per request, two words of elv.priv, set under vd->lock, except in
 * finish_request and requeue_request (the token cleared, the requeue
 * sequence set), which blk-mq calls once per dispatch, owning the request:
 *   priv[0]  the bundle of a held request, else NULL;
 *   priv[1]  while held, the sectors it counts toward its bundle (merges
 *            grow it: its bundle adds the difference); once dispatched,
 *            its driver token + 1 (0: none); once requeued, until it is
 *            dispatched again, VEL_PRIV_REQUEUED and its requeue sequence;
 *            while a write is queued unheld, VEL_PRIV_OWN if it is a
 *            reader's own (vel_insert_request).
 * The uses of priv[1] never overlap: a held request has no token, and
 * leaves its bundle (vel_remove_request) before it is given one; a requeued
 * one gave its token back first. Each has its own accessors.
 */
static inline struct vel_bundle *rq_bundle(struct request *rq)
{
	return rq->elv.priv[0];
}

static inline unsigned int rq_held_sectors(struct request *rq)
{
	return (unsigned int)(uintptr_t)rq->elv.priv[1];
}

static inline void rq_set_held_sectors(struct request *rq, unsigned int nr)
{
	rq->elv.priv[1] = (void *)(uintptr_t)nr;
}

#define VEL_PRIV_REQUEUED	BIT(31)
/*
 * A dispatched request's priority class sits above its token: finish_request
 * cannot ask req_get_ioprio(), which on 6.12 reads the request's first bio,
 * gone by then (blk_update_request()).
 */
#define VEL_PRIV_CLASS_SHIFT	28
#define VEL_PRIV_TOKEN_MASK	(BIT(VEL_PRIV_CLASS_SHIFT) - 1)

/* A queued write that its submitter waits on while it reads. */
#define VEL_PRIV_OWN		BIT(30)

/* A dispatched request's token, or -1. */
static inline int rq_token(struct request *rq)
{
	unsigned int v = (uintptr_t)rq->elv.priv[1];

	if (rq_bundle(rq) || (v & VEL_PRIV_REQUEUED))
		return -1;
	return (int)(v & VEL_PRIV_TOKEN_MASK) - 1;
}

/* A dispatched request's class (rq_token() is not -1). */
static inline enum vel_prio rq_token_class(struct request *rq)
{
	return ((uintptr_t)rq->elv.priv[1] >> VEL_PRIV_CLASS_SHIFT) & 3;
}

static inline void rq_set_token(struct request *rq, int token,
				enum vel_prio c)
{
	rq->elv.priv[1] = (void *)(uintptr_t)((token + 1) |
					      (c << VEL_PRIV_CLASS_SHIFT));
}

/* A requeued request's place in requeue order (31 bits, wrapping). */
static inline unsigned int rq_requeue_seq(struct request *rq)
{
	return (uintptr_t)rq->elv.priv[1] & ~VEL_PRIV_REQUEUED;
}

/* The next requeue's place, @rq's from now on. */
static inline void rq_take_requeue_seq(struct request *rq, atomic_t *seq)
{
	unsigned int v = atomic_inc_return(seq) & ~VEL_PRIV_REQUEUED;

	rq->elv.priv[1] = (void *)(uintptr_t)(VEL_PRIV_REQUEUED | v);
}

/* A queued, unheld write is a reader's own. */
static inline bool rq_own(struct request *rq)
{
	return !rq_bundle(rq) && ((uintptr_t)rq->elv.priv[1] & VEL_PRIV_OWN);
}

static inline void rq_set_own(struct request *rq)
{
	rq->elv.priv[1] = (void *)(uintptr_t)VEL_PRIV_OWN;
}

/* A queued write someone waits on: a sync one or a reader's own. */
static inline bool rq_waited_write(struct request *rq)
{
	return op_is_sync(rq->cmd_flags) || rq_own(rq);
}

static inline bool rq_is_requeued(struct request *rq)
{
	return (uintptr_t)rq->elv.priv[1] & VEL_PRIV_REQUEUED;
}

/* Neither held nor holding a token. */
static inline void rq_clear_priv(struct request *rq)
{
	rq->elv.priv[0] = NULL;
	rq->elv.priv[1] = NULL;
}

static enum vel_prio vel_ioprio_class(unsigned short ioprio)
{
	switch (IOPRIO_PRIO_CLASS(ioprio)) {
	case IOPRIO_CLASS_RT:
		return VEL_RT;
	case IOPRIO_CLASS_IDLE:
		return VEL_IDLE;
	default:
		return VEL_BE;
	}
}

static struct vel_class *vel_rq_class(struct vel_data *vd, struct request *rq)
{
	return &vd->cls[vel_ioprio_class(req_get_ioprio(rq))];
}

/*
 * Data writes the scheduler may hold back: not sync, FUA or preflush, and
 * best effort (RT writes must not wait, IDLE ones must not hold up BE).
 */
static bool vel_holdable(struct request *rq)
{
	return req_op(rq) == REQ_OP_WRITE && !op_is_sync(rq->cmd_flags) &&
	       vel_ioprio_class(req_get_ioprio(rq)) == VEL_BE;
}

static struct rb_root *vel_rb_root(struct vel_data *vd, struct request *rq)
{
	if (rq_bundle(rq))
		return &vd->held_sort;
	return &vel_rq_class(vd, rq)->sort[rq_data_dir(rq)];
}

/* Whether requests of @dir wait in any class's FIFO (lockless callers too). */
static bool vel_queued(struct vel_data *vd, enum vel_dir dir)
{
	int c;

	for (c = 0; c < VEL_CLASS_NR; c++)
		if (!list_empty_careful(&vd->cls[c].fifo[dir]))
			return true;
	return false;
}

static u64 vel_bundle_sectors(struct vel_data *vd)
{
	return (u64)vd->bundle_kb * 2;
}

/* A write held now must go write_expire later at the latest. */
static u64 vel_write_expire_ns(struct vel_data *vd, u64 now)
{
	return now + (u64)vd->write_expire * NSEC_PER_MSEC;
}

/*
 * When @rq's FIFO expiry (jiffies, as mq-deadline's) falls on the ns clock:
 * to order it against a bundle, never to decide that something may wait.
 */
static u64 vel_fifo_expire_ns(struct request *rq, u64 now)
{
	long left = (long)((unsigned long)rq->fifo_time - jiffies);

	if (left >= 0)
		return now + jiffies_to_nsecs(left);
	return now - min_t(u64, now, jiffies_to_nsecs(-left));
}

static u64 vel_bundle_ready_ns(struct vel_data *vd, struct vel_bundle *b)
{
	return b->opened_ns + (u64)vd->bundle_expire_us * NSEC_PER_USEC;
}

/*
 * When @b must go at the latest: bundle_expire_us after it opened, or its
 * oldest write's write_expire. Bundle times have one base, ns, so the check
 * that a bundle must wait and the timer armed for it read the same clock.
 */
static u64 vel_bundle_due_ns(struct vel_data *vd, struct vel_bundle *b)
{
	return min(vel_bundle_ready_ns(vd, b), b->expire_ns);
}

/* Whether sectors [start, end) lie inside @b's erase block. */
static bool vel_in_bundle(struct vel_bundle *b, sector_t start, sector_t end)
{
	return start >= b->start && end <= b->end;
}

/*
 * Why @b is ready to go, or -1 if it must still be held. A forced reason and
 * size are checked first so the reason recorded is the most specific one.
 * Once ready, always ready: a bundle marked ready by time stays ready when
 * bundle_expire_us is raised before it goes.
 */
static int vel_bundle_ready(struct vel_data *vd, struct vel_bundle *b, u64 now)
{
	if (b->forced >= 0)
		return b->forced;
	if (b->sectors >= vel_bundle_sectors(vd))
		return VEL_CLOSE_SIZE;
	if (now >= b->expire_ns)
		return VEL_CLOSE_EXPIRE;
	if (now >= vel_bundle_ready_ns(vd, b))
		return VEL_CLOSE_TIME;
	return b->ready ? b->why : -1;
}

/* Whether @b is in the open set (waiting or ready), not draining. */
static bool vel_bundle_is_open(struct vel_bundle *b)
{
	return b->ready || !list_empty(&b->open);
}

static bool vel_bundle_less(struct rb_node *a, const struct rb_node *b)
{
	return rb_entry(a, struct vel_bundle, ready_node)->seq <
	       rb_entry(b, struct vel_bundle, ready_node)->seq;
}

/*
 * Move @b from the waiting list to the ready set if it is ready; ready bundles
 * make has_work true. Only waiting bundles: a bundle being drained may still
 * take a bio merge, and counting it would leave nr_ready above zero for good.
 */
static void vel_check_ready(struct vel_data *vd, struct vel_bundle *b, u64 now)
{
	int why;

	if (b->ready || list_empty(&b->open))
		return;
	why = vel_bundle_ready(vd, b, now);
	if (why < 0)
		return;
	b->why = why;
	b->ready = true;
	list_del_init(&b->open);
	rb_add_cached(&b->ready_node, &vd->ready, vel_bundle_less);
	WRITE_ONCE(vd->nr_ready, vd->nr_ready + 1);
}

/* Give every open bundle the reason @reason to go now (rare: O(n)). */
static void vel_force_all(struct vel_data *vd, int reason)
{
	struct vel_bundle *b, *n;
	struct rb_node *rb;

	for (rb = rb_first_cached(&vd->ready); rb; rb = rb_next(rb)) {
		b = rb_entry(rb, struct vel_bundle, ready_node);
		if (b->forced < 0)
			b->forced = reason;
		/* Out of the hash: later writes open new bundles. */
		hash_del(&b->hash);
	}
	list_for_each_entry_safe(b, n, &vd->open, open) {
		b->forced = reason;
		hash_del(&b->hash);
		vel_check_ready(vd, b, 0);
	}
}

/* Bundles due by time or expiry: only ever at the head of the waiting list. */
static void vel_mark_ready(struct vel_data *vd, u64 now)
{
	struct vel_bundle *b;

	while ((b = list_first_entry_or_null(&vd->open, struct vel_bundle,
					     open))) {
		vel_check_ready(vd, b, now);
		if (!b->ready)
			break;
	}
}

/* The oldest ready bundle. */
static struct vel_bundle *vel_ready_bundle(struct vel_data *vd)
{
	struct rb_node *rb = rb_first_cached(&vd->ready);

	return rb ? rb_entry(rb, struct vel_bundle, ready_node) : NULL;
}

/*
 * Arm the timer for the moment the next held bundle becomes ready: the head
 * of the waiting list, after the bundles already due are marked ready (their
 * dispatch needs no timer). So whenever bundles wait, a timer is pending, set
 * in the future: waiting for a token never spins on a timer. Re-armed only
 * when that moment changes (a new head, a new bundle_expire_us), or when the
 * timer is not pending: hrtimer_is_queued(), not hrtimer_active(), which is
 * also true while vel_timer_fn() runs. A dispatch that saw the head not yet
 * due (its clock read just before the callback fired) must arm it again, or
 * the callback's queue run finds nothing and the bundle waits for the next
 * I/O, which a queue freeze never sends.
 */
static void vel_arm_timer(struct vel_data *vd, u64 now)
{
	struct vel_bundle *b;
	u64 when;

	vel_mark_ready(vd, now);
	b = list_first_entry_or_null(&vd->open, struct vel_bundle, open);
	when = b ? vel_bundle_due_ns(vd, b) : U64_MAX;
	if (READ_ONCE(vd->antic_waits))
		when = min(when, vd->antic_until);
	if (when == U64_MAX)
		return;
	if (when == vd->timer_when && hrtimer_is_queued(&vd->timer))
		return;
	vd->timer_when = when;
	hrtimer_start(&vd->timer, ns_to_ktime(when > now ? when - now : 0),
		      HRTIMER_MODE_REL_SOFT);
}

/* Runs in softirq context: no vd->lock here; dispatch does the work. */
static enum hrtimer_restart vel_timer_fn(struct hrtimer *timer)
{
	struct vel_data *vd = container_of(timer, struct vel_data, timer);

	WRITE_ONCE(vd->kick, true);
	blk_mq_run_hw_queues(vd->q, true);
	return HRTIMER_NORESTART;
}

static struct vel_bundle *vel_find_bundle(struct vel_data *vd, u64 block)
{
	struct vel_bundle *b;

	hash_for_each_possible(vd->bundles, b, hash, block)
		if (b->block == block)
			return b;
	return NULL;
}

/* Insert @rq into @b's list, keeping it sorted by sector. */
static void vel_bundle_add_rq(struct vel_bundle *b, struct request *rq)
{
	struct request *pos;

	b->nr_rqs++;
	list_for_each_entry_reverse(pos, &b->rqs, queuelist) {
		if (blk_rq_pos(pos) <= blk_rq_pos(rq)) {
			list_add(&rq->queuelist, &pos->queuelist);
			return;
		}
	}
	list_add(&rq->queuelist, &b->rqs);
}

/*
 * Hold @rq in its erase block's bundle; false if it cannot be held (it spans
 * two erase blocks, or no bundle could be had).
 */
static bool vel_hold(struct vel_data *vd, struct request *rq, u64 now)
{
	u64 bs = vel_bundle_sectors(vd);
	u64 block = div64_u64(blk_rq_pos(rq), bs);
	struct vel_bundle *b;

	if (div64_u64(blk_rq_pos(rq) + blk_rq_sectors(rq) - 1, bs) != block) {
		vd->stats.spanning++;
		return false;
	}
	b = vel_find_bundle(vd, block);
	if (!b) {
		b = kmalloc_node(sizeof(*b), GFP_NOWAIT | __GFP_NOWARN,
				 vd->q->node);
		if (!b)
			return false;
		b->block = block;
		b->start = block * bs;
		b->end = b->start + bs;
		b->opened_ns = now;
		b->expire_ns = vel_write_expire_ns(vd, now);
		b->sectors = 0;
		b->nr_rqs = 0;
		b->forced = -1;
		b->why = -1;
		b->ready = false;
		b->seq = ++vd->seq;
		RB_CLEAR_NODE(&b->ready_node);
		INIT_LIST_HEAD(&b->rqs);
		hash_add(vd->bundles, &b->hash, block);
		list_add_tail(&b->open, &vd->open);
		WRITE_ONCE(vd->nr_open, vd->nr_open + 1);
		vd->stats.bundles_opened++;
	}
	rq->elv.priv[0] = b;
	rq_set_held_sectors(rq, blk_rq_sectors(rq));
	b->sectors += blk_rq_sectors(rq);
	vel_bundle_add_rq(b, rq);
	vd->nr_held++;
	vel_check_ready(vd, b, now);
	return true;
}

/* @b leaves the open set (to drain, or because merges emptied it). */
static void vel_bundle_close(struct vel_data *vd, struct vel_bundle *b,
			     int reason)
{
	hash_del(&b->hash);
	if (b->ready) {
		rb_erase_cached(&b->ready_node, &vd->ready);
		RB_CLEAR_NODE(&b->ready_node);
		WRITE_ONCE(vd->nr_ready, vd->nr_ready - 1);
		b->ready = false;
	} else {
		list_del_init(&b->open);
	}
	WRITE_ONCE(vd->nr_open, vd->nr_open - 1);
	if (WARN_ON_ONCE(reason < 0 || reason >= VEL_CLOSE_NR))
		reason = VEL_CLOSE_TIME;
	vd->stats.bundles_closed[reason]++;
}

/* Take @rq off every list and tree it is on; free its bundle if emptied. */
static void vel_remove_request(struct vel_data *vd, struct request *rq)
{
	struct request_queue *q = rq->q;
	struct vel_bundle *b = rq_bundle(rq);
	const enum vel_dir dir = rq_data_dir(rq);
	struct vel_class *vc = vel_rq_class(vd, rq);

	if (vc->next_rq[dir] == rq) {
		struct rb_node *n = rb_next(&rq->rb_node);

		vc->next_rq[dir] = n ? rb_entry_rq(n) : NULL;
	}
	/*
	 * A sync write on a FIFO was counted; one being inserted (merged into
	 * a queued request before it was queued) was not: its list is empty.
	 */
	if (!b && dir == VEL_WRITE && rq_waited_write(rq) &&
	    !list_empty(&rq->queuelist) && !WARN_ON_ONCE(!vd->sync_writes))
		vd->sync_writes--;
	list_del_init(&rq->queuelist);
	if (!RB_EMPTY_NODE(&rq->rb_node))
		elv_rb_del(vel_rb_root(vd, rq), rq);
	elv_rqhash_del(q, rq);
	if (q->last_merge == rq)
		q->last_merge = NULL;

	if (!b)
		return;
	b->sectors -= min(b->sectors, rq_held_sectors(rq));
	b->nr_rqs--;
	vd->nr_held--;
	rq_clear_priv(rq);
	/* Held <=> on its bundle's list: the list empties with the count. */
	WARN_ON_ONCE((b->nr_rqs == 0) != list_empty(&b->rqs));
	if (!b->nr_rqs) {
		if (vel_bundle_is_open(b))
			vel_bundle_close(vd, b, VEL_CLOSE_MERGED);
		if (vd->draining == b)
			WRITE_ONCE(vd->draining, NULL);
		kfree(b);
	}
}

/* Hand @rq to the driver: update batch position and statistics. */
static struct request *vel_start(struct vel_data *vd, struct request *rq)
{
	const enum vel_dir dir = rq_data_dir(rq);

	struct vel_class *vc = vel_rq_class(vd, rq);

	if (rq_bundle(rq)) {
		vd->stats.bundled_writes++;
	} else {
		struct rb_node *n = rb_next(&rq->rb_node);

		vc->next_rq[VEL_READ] = NULL;
		vc->next_rq[VEL_WRITE] = NULL;
		vc->next_rq[dir] = n ? rb_entry_rq(n) : NULL;
	}
	vel_remove_request(vd, rq);
	vd->stats.dispatched[dir]++;
	vd->stats.class_dispatched[vc - vd->cls]++;
	rq->rq_flags |= RQF_STARTED;
	return rq;
}

static inline struct request *vel_fifo_head(struct vel_class *vc,
					    enum vel_dir dir)
{
	return list_first_entry_or_null(&vc->fifo[dir], struct request,
					queuelist);
}

static bool vel_fifo_expired(struct vel_class *vc, enum vel_dir dir)
{
	struct request *rq = vel_fifo_head(vc, dir);

	return rq && time_is_before_eq_jiffies((unsigned long)rq->fifo_time);
}

/* Bundle @b leaves the open set and drains whole; returns its first write. */
static struct request *vel_start_bundle(struct vel_data *vd,
					struct vel_bundle *b, int reason)
{
	struct vel_class *vc = &vd->cls[VEL_BE];

	vel_bundle_close(vd, b, reason);
	WRITE_ONCE(vd->draining, b);
	vd->drain_run = 1;
	vd->drain_yield = false;
	vc->next_rq[VEL_WRITE] = NULL;	/* after the bundle, choose afresh */
	vc->starved = 0;
	vc->last_dir = VEL_WRITE;
	vc->batching = 0;
	return list_first_entry(&b->rqs, struct request, queuelist);
}

/*
 * Write batch of class @vc: the older of its dispatchable-write FIFO head and
 * the oldest ready bundle @b (BE only) goes first.
 */
static struct request *vel_dispatch_writes(struct vel_data *vd,
					   struct vel_class *vc,
					   struct vel_bundle *b, int reason,
					   u64 now)
{
	struct request *head = vel_fifo_head(vc, VEL_WRITE), *rq;

	if (b && (!head || vel_fifo_expire_ns(head, now) >= b->expire_ns))
		return vel_start_bundle(vd, b, reason);
	if (!head)
		return NULL;

	vc->starved = 0;
	rq = vc->next_rq[VEL_WRITE];
	if (vel_fifo_expired(vc, VEL_WRITE) || !rq) {
		if (vel_fifo_expired(vc, VEL_WRITE))
			vd->stats.expired[VEL_WRITE]++;
		rq = head;
	}
	vc->last_dir = VEL_WRITE;
	vc->batching = 0;
	return rq;
}

static struct request *vel_dispatch_reads(struct vel_data *vd,
					  struct vel_class *vc)
{
	struct request *rq = vc->next_rq[VEL_READ];

	if (vel_fifo_expired(vc, VEL_READ) || !rq) {
		if (vel_fifo_expired(vc, VEL_READ))
			vd->stats.expired[VEL_READ]++;
		rq = vel_fifo_head(vc, VEL_READ);
	}
	vc->last_dir = VEL_READ;
	vc->batching = 0;
	return rq;
}

/*
 * The draining bundle's next write, or a read: after fifo_batch of a bundle's
 * writes, BE's queued reads get one read batch (up to fifo_batch, in sector
 * order), then the bundle resumes. A bundle is up to bundle_kb: on a shallow
 * device a read must not wait for all of it.
 */
static struct request *vel_drain(struct vel_data *vd, struct vel_class *vc)
{
	struct request *rq;

	if (vd->drain_yield) {
		rq = vc->next_rq[VEL_READ];
		if (vc->last_dir == VEL_READ && rq &&
		    vc->batching < vd->fifo_batch &&
		    !vel_fifo_expired(vc, VEL_READ)) {
			vc->batching++;
			return rq;
		}
		vd->drain_yield = false;
		vc->next_rq[VEL_WRITE] = NULL;
		vc->last_dir = VEL_WRITE;
		vc->batching = 0;
		vd->drain_run = 0;
	} else if (vd->drain_run >= vd->fifo_batch &&
		   !list_empty(&vc->fifo[VEL_READ])) {
		rq = vel_dispatch_reads(vd, vc);
		vc->batching++;
		vd->drain_yield = true;
		return rq;
	}
	vd->drain_run++;
	return list_first_entry(&vd->draining->rqs, struct request, queuelist);
}

/* Whether reads of class @c are queued or on the device. */
static bool vel_class_reading(struct vel_data *vd, int c)
{
	return !list_empty_careful(&vd->cls[c].fifo[VEL_READ]) ||
	       atomic_read(&vd->reads_on[c]);
}

/*
 * The reader writes make way for: the highest class whose reads are queued,
 * on the device, or were seen (inserted or completed) less than @window ago;
 * VEL_CLASS_NR if none.
 */
static int vel_read_class(struct vel_data *vd, u64 now, u64 window)
{
	u64 seen;
	int c;

	for (c = 0; c < VEL_CLASS_NR; c++) {
		if (vel_class_reading(vd, c))
			return c;
		/* Pairs with smp_mb__before_atomic() in vel_finish_request(). */
		smp_rmb();
		seen = READ_ONCE(vd->last_read_ns[c]);
		if (seen && (s64)(now - seen) < (s64)window)
			return c;
	}
	return VEL_CLASS_NR;
}

/*
 * The highest class with writes to dispatch (BE's draining or ready bundles
 * too), VEL_CLASS_NR if none: the class of the write that would go.
 */
static int vel_write_class(struct vel_data *vd)
{
	int c;

	for (c = 0; c < VEL_CLASS_NR; c++)
		if (!list_empty(&vd->cls[c].fifo[VEL_WRITE]) ||
		    (c == VEL_BE && (vd->draining || vd->nr_ready)))
			return c;
	return VEL_CLASS_NR;
}

/*
 * Reads count as active while one is queued or on the device, or for
 * read_active_us (10 ms) after one arrived or completed: a reader at depth 1
 * has nothing queued between a completion and its next submission, and
 * write_depth must not lapse in that gap. A task that submitted a read that
 * recently is a reader (vel_reader). A tunable, not a constant, so that a
 * device slowed down as a whole (the lab's served models, whose time runs
 * `dilation` times slower than the host's) keeps it in the device's time.
 * Read without vd->lock by vel_limit_depth (through vel_reader).
 */
static u64 vel_read_active_ns(struct vel_data *vd)
{
	return (u64)READ_ONCE(vd->read_active_us) * NSEC_PER_USEC;
}

/* Start a new window (read_active_us) of the read peak if this one is over. */
static void vel_read_peak_window(struct vel_data *vd, u64 now)
{
	s64 age = now - vd->read_peak_ns;
	u64 window = vel_read_active_ns(vd);

	if (age < (s64)window)
		return;
	vd->read_peak_prev = age < (s64)(2 * window) ? vd->read_peak : 0;
	vd->read_peak = atomic_read(&vd->inflight[VEL_READ]);
	vd->read_peak_ns = now;
}

/*
 * The driver tags writes may hold while reads are active: all but one for
 * each read the readers kept on the device in the last 10-20 ms (at least
 * one), and never fewer than write_depth. A reader at depth 1 then finds its
 * tag free whatever the writers queue; readers wanting more than the device
 * minus write_depth share the rest by read preference.
 */
static unsigned int vel_write_share(struct vel_data *vd, u64 now)
{
	unsigned int reserve;

	vel_read_peak_window(vd, now);
	reserve = max3(1U, vd->read_peak, vd->read_peak_prev);
	if (reserve >= vd->device_depth)
		return vd->write_depth;
	return max_t(unsigned int, vd->write_depth, vd->device_depth - reserve);
}

/*
 * The writes the device may hold while reads are active. Where reads that
 * share the device with writes spend longer on it than the fastest read
 * did, by more than write_backlog_us on average — it serves them behind the
 * writes it holds (a card or eMMC writing back megabyte requests one after
 * the other) — as many as it completes in write_backlog_us at its pace (at
 * least VEL_BACKLOG_MIN), so such a read waits about that long for writes.
 * Elsewhere no limit: a device with parallel units, whose reads pass its
 * writes (NVMe), or one merely slow, whose reads take as long whatever the
 * writes do (null_blk at 12 ms, a network volume); nor before the means
 * are known, nor with write_backlog_us 0.
 */
static unsigned int vel_write_backlog(struct vel_data *vd)
{
	u64 gap = READ_ONCE(vd->write_gap_ns);
	u64 window = (u64)vd->write_backlog_us * NSEC_PER_USEC;
	u64 n;

	if (!window || !gap ||
	    READ_ONCE(vd->read_wait_ns) <= READ_ONCE(vd->read_fast_ns) + window)
		return vd->device_depth;
	n = div64_u64(window, gap);
	return clamp_t(u64, n, min_t(u64, VEL_BACKLOG_MIN, vd->device_depth),
		       vd->device_depth);
}

/*
 * Reads that share the device with writes spend on average more than twice
 * as long on it as the fastest read did: the device serves reads behind its
 * writes, so switching between them costs (a card or eMMC programming while
 * reads wait for its dies). False until both means are known.
 */
static bool vel_writes_slow_reads(struct vel_data *vd)
{
	u64 fast = READ_ONCE(vd->read_fast_ns);

	return fast && READ_ONCE(vd->read_wait_ns) > 2 * fast;
}

/*
 * Whether a write of class @w (vel_write_class) may go to the device: writes
 * hold fewer tags than their share (vel_write_share) and their backlog
 * (vel_write_backlog), or no reader of class @w or higher is about (reads in
 * the last read_active_us count). When a write must wait, the next write completion
 * runs the queue (vel_finish_request): the flag is set before the count is
 * read, and a completion drops the count before it reads the flag, so one of
 * them sees the other; an insert of a higher class's write clears the flag.
 */
static bool vel_write_room(struct vel_data *vd, int w, u64 now)
{
	unsigned int share;

	if (w < vel_read_class(vd, now, vel_read_active_ns(vd)))
		return true;
	share = min(vel_write_share(vd, now), vel_write_backlog(vd));
	if (share >= vd->device_depth)
		return true;
	WRITE_ONCE(vd->write_waits, true);
	/* Pairs with smp_mb__after_atomic() in vel_finish_request(). */
	smp_mb();
	if (atomic_read(&vd->inflight[VEL_WRITE]) < share) {
		WRITE_ONCE(vd->write_waits, false);
		return true;
	}
	vd->stats.capped++;
	return false;
}

/*
 * The writes' last turn: from the write that ended the reader's previous
 * turn until no write was on the device, at most write_expire. A write
 * completion that left none on the device and came after that write ends
 * the turn now being measured; until then, the one before counts.
 */
static u64 vel_write_turn(struct vel_data *vd)
{
	/* With no write on the device, the last completion left none. */
	u64 idle = READ_ONCE(vd->write_done_ns);
	u64 len = vd->write_turn_len;

	if (vd->write_turn_ns && idle > vd->write_turn_ns &&
	    !atomic_read(&vd->inflight[VEL_WRITE]))
		len = idle - vd->write_turn_ns;
	return min_t(u64, len, (u64)vd->write_expire * NSEC_PER_MSEC);
}

/*
 * The reader's mean think time once three gaps are in it; until then unknown
 * (U64_MAX), and a reader whose think time is unknown counts as one that comes
 * back at once, as bfq's has_short_ttime before its samples are valid.
 */
static u64 vel_think(struct vel_data *vd)
{
	if (vd->think_samples <= VEL_THINK_TRUSTED)
		return U64_MAX;
	return div_u64(vd->think_total + 128, vd->think_samples);
}

/* When the reader's turn (begun at turn_ns, not 0) ends. */
static u64 vel_turn_end(struct vel_data *vd)
{
	return vd->turn_ns + vel_write_turn(vd);
}

/*
 * Whether someone waits on the writes queued: a sync write, an expired write
 * FIFO, or a bundle (the one draining, else the oldest ready one) that a
 * sync write or a writeback waiter released or whose oldest write expired.
 */
static bool vel_writes_waited_on(struct vel_data *vd, u64 now)
{
	struct vel_bundle *b = vd->draining ? vd->draining :
			       vel_ready_bundle(vd);
	int c;

	if (vd->sync_writes)
		return true;
	for (c = 0; c < VEL_CLASS_NR; c++)
		if (vel_fifo_expired(&vd->cls[c], VEL_WRITE))
			return true;
	return b && (b->forced == VEL_CLOSE_SYNC ||
		     b->forced == VEL_CLOSE_WAITER || now >= b->expire_ns);
}

/*
 * Anticipation (see the top of this file): whether the writes waiting, the
 * highest of class @w (vel_write_class), stay off the device for a reader's
 * turn: the reader is the highest class with a read queued or on the device
 * or one seen less than anticipate_us ago, and no lower than @w. Starts the
 * turn; when it says yes, antic_until is when dispatch must look again (the
 * turn's end, or the end of the wait for a reader with nothing queued or on
 * the device).
 */
static bool vel_anticipate(struct vel_data *vd, int w, u64 now)
{
	u64 window = (u64)vd->anticipate_us * NSEC_PER_USEC;
	u64 think = vel_think(vd);
	bool reading;
	u64 done;
	u64 end;
	int r;

	if (!window || (think != U64_MAX && think >= window))
		return false;
	/*
	 * The flag goes up before the reads on the device are counted: a read
	 * completing after the count was read sees it and runs the queue
	 * (vel_finish_request), so writes never wait out a whole turn for a
	 * completion that came in between. Lowered again unless writes wait.
	 */
	WRITE_ONCE(vd->antic_waits, true);
	/* Pairs with the fully ordered atomic_dec_return() in vel_finish_request(). */
	smp_mb();
	if (atomic_read(&vd->inflight[VEL_READ]) +
	    atomic_read(&vd->inflight[VEL_WRITE]) + 1 < vd->device_depth)
		goto no;
	/* No reader about, or the writes' class is higher than its. */
	r = vel_read_class(vd, now, window);
	if (w < r)
		goto no;
	reading = vel_class_reading(vd, r);
	/* Pairs with smp_mb__before_atomic() in vel_finish_request(). */
	smp_rmb();
	done = READ_ONCE(vd->last_read_ns[r]);
	/* No writes' turn measured yet: the first writes go and set it. */
	if (!vd->write_turn_ns || vel_writes_waited_on(vd, now))
		goto no;
	if (!vd->turn_ns)
		vd->turn_ns = now;
	end = vel_turn_end(vd);
	if ((s64)(now - end) >= 0)
		goto no;
	vd->antic_until = reading ? end : min(end, done + window);
	return true;
no:
	WRITE_ONCE(vd->antic_waits, false);
	return false;
}

/*
 * Whether class @c has something it may dispatch (held bundles wait): the
 * one definition of "work", under vd->lock (dispatch) or without it
 * (has_work, which may be wrong for an instant and is re-run after any
 * change that makes work: insert, timer, token, completion).
 */
static bool vel_class_pending(struct vel_data *vd, enum vel_prio c)
{
	struct vel_class *vc = &vd->cls[c];

	if (!list_empty_careful(&vc->fifo[VEL_READ]) ||
	    !list_empty_careful(&vc->fifo[VEL_WRITE]))
		return true;
	return c == VEL_BE &&
	       (READ_ONCE(vd->draining) || READ_ONCE(vd->nr_ready));
}

/*
 * Whether anything could be handed out now, tokens aside: with hold_idle=0,
 * held bundles too (a free token takes the oldest, vel_release_idle).
 */
static bool vel_dispatchable(struct vel_data *vd)
{
	int c;

	if (!list_empty_careful(&vd->requeued) ||
	    !list_empty_careful(&vd->dispatch) ||
	    (!READ_ONCE(vd->hold_idle) && !list_empty_careful(&vd->open)))
		return true;
	for (c = 0; c < VEL_CLASS_NR; c++)
		if (vel_class_pending(vd, c))
			return true;
	return false;
}

/* Whether a request or bundle from @t has waited @age at @now. */
static bool vel_waited(u64 t, u64 now, u64 age)
{
	return (s64)(now - t) >= (s64)age;
}

/*
 * The request of class @c that its age lets pass a higher class, or NULL:
 * as mq-deadline's dd_dispatch_prio_aged_requests(), only a request that
 * has itself waited prio_aging_expire passes. The older of the class's FIFO
 * heads if it did; for BE, else the first write in sector order that did in
 * the draining bundle, or (none draining) in the oldest ready one, which is
 * then *@bp. A bundle's writes are counted from their own start, so RT I/O
 * can hold a bundle's younger writes, and BE reads, until they age too; a
 * bundle opened less than prio_aging_expire ago is not searched (its writes
 * came after it opened, bar a plug's delay).
 */
static struct request *vel_aged_request(struct vel_data *vd, enum vel_prio c,
					u64 now, struct vel_bundle **bp)
{
	u64 age = (u64)vd->prio_aging_expire * NSEC_PER_MSEC;
	struct request *rq, *old = NULL;
	struct vel_bundle *b;
	int d;

	*bp = NULL;
	for (d = VEL_READ; d <= VEL_WRITE; d++) {
		rq = vel_fifo_head(&vd->cls[c], d);
		if (rq && vel_waited(rq->start_time_ns, now, age) &&
		    (!old || rq->start_time_ns < old->start_time_ns))
			old = rq;
	}
	if (old || c != VEL_BE)
		return old;
	b = vd->draining ? vd->draining : vel_ready_bundle(vd);
	if (!b || !vel_waited(b->opened_ns, now, age))
		return NULL;
	list_for_each_entry(rq, &b->rqs, queuelist) {
		if (vel_waited(rq->start_time_ns, now, age)) {
			*bp = b;
			return rq;
		}
	}
	return NULL;
}

/*
 * The class to serve: a lower class with a request that has waited
 * prio_aging_expire (BE before IDLE; that request is *@aged, *@bp its bundle),
 * else the highest class with something to dispatch; -1 if none has. As
 * mq-deadline, so IDLE cannot starve forever.
 */
static int vel_pick_class(struct vel_data *vd, u64 now, struct request **aged,
			  struct vel_bundle **bp)
{
	int c, first = -1;

	*aged = NULL;
	*bp = NULL;
	for (c = 0; c < VEL_CLASS_NR; c++) {
		if (!vel_class_pending(vd, c))
			continue;
		if (first < 0) {
			first = c;
		} else {
			*aged = vel_aged_request(vd, c, now, bp);
			if (*aged)
				return c;
		}
	}
	return first;
}

/*
 * Dispatch @rq, which aged (vel_pick_class): it alone passes the higher
 * class. From a ready bundle it starts the bundle draining; the bundle's
 * younger writes, and its read batches, wait for BE's turn or their age.
 */
static struct request *vel_dispatch_aged(struct vel_data *vd,
					 struct request *rq,
					 struct vel_bundle *b, u64 now)
{
	struct vel_class *vc = vel_rq_class(vd, rq);

	vd->stats.aged++;
	if (b && b != vd->draining) {
		vel_start_bundle(vd, b, vel_bundle_ready(vd, b, now));
	} else if (b) {
		vd->drain_run++;
	} else {
		if (rq_data_dir(rq) == VEL_WRITE)
			vc->starved = 0;
		vc->last_dir = rq_data_dir(rq);
		vc->batching = 1;
	}
	return vel_start(vd, rq);
}

/*
 * A token is free and nothing else may go: the oldest held bundle goes now
 * rather than leave the device idle (hold_idle=0), as a ready BE bundle
 * would: only where writes are within their share and no reader is
 * anticipated (vel_write_room, vel_anticipate).
 */
static struct request *vel_release_idle(struct vel_data *vd, u64 now)
{
	struct vel_bundle *b;
	struct request *rq;

	if (vd->hold_idle)
		return NULL;
	b = list_first_entry_or_null(&vd->open, struct vel_bundle, open);
	if (!b || !vel_write_room(vd, VEL_BE, now))
		return NULL;
	if (vel_anticipate(vd, VEL_BE, now)) {
		vd->stats.anticipated++;
		return NULL;
	}
	rq = vel_start_bundle(vd, b, VEL_CLOSE_IDLE);
	vd->cls[VEL_BE].batching++;
	return vel_start(vd, rq);
}

static struct request *__vel_dispatch(struct vel_data *vd, u64 now)
{
	struct vel_bundle *b = NULL;
	struct vel_class *vc;
	struct request *rq;
	bool reads, writes, write_due, hold, antic = false;
	int reason = -1, c, w;

	lockdep_assert_held(&vd->lock);

	/*
	 * Requeues (the device had them already), then at-head inserts, first,
	 * even inside a draining bundle.
	 */
	rq = list_first_entry_or_null(&vd->requeued, struct request, queuelist);
	if (!rq)
		rq = list_first_entry_or_null(&vd->dispatch, struct request,
					      queuelist);
	if (rq) {
		list_del_init(&rq->queuelist);
		vd->stats.dispatched[rq_data_dir(rq)]++;
		rq->rq_flags |= RQF_STARTED;
		return rq;
	}

	/*
	 * With writes at their share, or in a reader's turn, only reads go,
	 * even inside a bundle. Writes of a higher class than the reader's
	 * are neither capped nor held (vel_write_class, vel_read_class).
	 */
	w = vel_write_class(vd);
	hold = w < VEL_CLASS_NR;
	if (hold && vel_write_room(vd, w, now)) {
		antic = vel_anticipate(vd, w, now);
		hold = antic;
	}
	if (hold) {
		for (c = 0; c < VEL_CLASS_NR; c++)
			if (!list_empty(&vd->cls[c].fifo[VEL_READ]))
				break;
		if (c == VEL_CLASS_NR) {
			/* The reader's read, its completion or the timer. */
			/* antic_waits is up (vel_anticipate). */
			if (antic)
				vd->stats.anticipated++;
			return NULL;
		}
		vc = &vd->cls[c];
		rq = vel_dispatch_reads(vd, vc);
		goto dispatch;
	}

	c = vel_pick_class(vd, now, &rq, &b);
	if (c < 0)
		return vel_release_idle(vd, now);
	if (rq)
		return vel_dispatch_aged(vd, rq, b, now);
	vc = &vd->cls[c];

	/*
	 * A bundle goes out back to back, so the device sees its block at
	 * once; only a read batch every fifo_batch writes comes between.
	 */
	if (c == VEL_BE && vd->draining)
		return vel_start(vd, vel_drain(vd, vc));

	/*
	 * Continue the batch in sector order. Waiting reads end a write batch,
	 * unless its next write is a reader's own (its reader waits on it as on
	 * them) on a device where writes slow reads (switching costs there):
	 * writes that must go (starved or expired) win the next choice anyway.
	 */
	rq = vc->next_rq[vc->last_dir];
	if (rq && vc->batching < vd->fifo_batch &&
	    !vel_fifo_expired(vc, vc->last_dir) &&
	    (vc->last_dir == VEL_READ || list_empty(&vc->fifo[VEL_READ]) ||
	     (rq_own(rq) && vel_writes_slow_reads(vd))))
		goto dispatch;

	if (c == VEL_BE)
		b = vel_ready_bundle(vd);
	if (b)
		reason = vel_bundle_ready(vd, b, now);
	reads = !list_empty(&vc->fifo[VEL_READ]);
	writes = b || !list_empty(&vc->fifo[VEL_WRITE]);
	/* A reader's turn that is over gives the writes theirs. */
	write_due = vel_fifo_expired(vc, VEL_WRITE) ||
		    reason == VEL_CLOSE_EXPIRE ||
		    (vd->turn_ns && now >= vel_turn_end(vd));

	if (reads && !(writes && write_due)) {
		if (!writes || vc->starved++ < vd->writes_starved) {
			rq = vel_dispatch_reads(vd, vc);
			goto dispatch;
		}
		vd->stats.starved++;
	}
	if (!writes)
		return NULL;
	rq = vel_dispatch_writes(vd, vc, b, reason, now);
	if (!rq)
		return NULL;

dispatch:
	vc->batching++;
	return vel_start(vd, rq);
}

static int vel_token_wake(struct wait_queue_entry *wqe, unsigned int mode,
			  int flags, void *key)
{
	struct sbq_wait *wait = container_of(wqe, struct sbq_wait, wait);
	struct vel_data *vd = READ_ONCE(wqe->private);

	sbitmap_del_wait_queue(wait);
	blk_mq_run_hw_queues(vd->q, true);
	return 1;
}

/*
 * A token for one more request on the device, or -1. Without one, dispatch
 * is woken when a request completes and gives its token back, the way kyber
 * waits on its domain tokens: a request chosen now would wait in blk-mq's
 * dispatch list, chosen before the requests that arrive meanwhile were seen.
 */
static int vel_get_token(struct vel_data *vd)
{
	int nr = __sbitmap_queue_get(&vd->tokens);

	if (nr < 0 && list_empty_careful(&vd->token_wait.wait.entry)) {
		vd->token_ws = sbq_wait_ptr(&vd->tokens, &vd->wait_index);
		sbitmap_add_wait_queue(&vd->tokens, vd->token_ws,
				       &vd->token_wait);
		vd->stats.deferred++;
		/* A token may have come back before we were on the queue. */
		nr = __sbitmap_queue_get(&vd->tokens);
	}
	if (nr >= 0 && !list_empty_careful(&vd->token_wait.wait.entry)) {
		spin_lock_irq(&vd->token_ws->wait.lock);
		sbitmap_del_wait_queue(&vd->token_wait);
		spin_unlock_irq(&vd->token_ws->wait.lock);
	}
	return nr;
}

static void vel_put_token(struct vel_data *vd, struct request *rq, int nr)
{
	sbitmap_queue_clear(&vd->tokens, nr,
			    rq ? rq->mq_ctx->cpu : raw_smp_processor_id());
}

/* A mean that keeps 1/8 of each sample (0: none yet, the first is the mean). */
static u64 vel_mean8(u64 mean, u64 sample)
{
	return mean ? mean - (mean >> 3) + (sample >> 3) : sample;
}

/*
 * A write left the device at @now with @left writes still on it: when the
 * last one had left some too, the device was writing all along, and the gap
 * is its pace (vel_write_backlog's mean).
 */
static void vel_write_done(struct vel_data *vd, u64 now, unsigned int left)
{
	u64 last = READ_ONCE(vd->write_done_ns);

	if (READ_ONCE(vd->write_left) && now > last)
		WRITE_ONCE(vd->write_gap_ns,
			   vel_mean8(READ_ONCE(vd->write_gap_ns), now - last));
	WRITE_ONCE(vd->write_done_ns, now);
	WRITE_ONCE(vd->write_left, left > 0);
}

/*
 * A read that began on the device at @start (blk_mq_start_request, with the
 * block layer's accounting on: vel_init_sched) left it at @now: its time
 * there, to the fastest read's and, if writes were on the device
 * (@beside), to vel_write_backlog's mean.
 */
static void vel_read_wait(struct vel_data *vd, u64 now, u64 start,
			  bool beside)
{
	u64 t, fast;

	if (!start || now <= start)
		return;
	t = now - start;
	fast = READ_ONCE(vd->read_fast_ns);
	if (!fast || t < fast)
		WRITE_ONCE(vd->read_fast_ns, t);
	if (beside)
		WRITE_ONCE(vd->read_wait_ns,
			   vel_mean8(READ_ONCE(vd->read_wait_ns), t));
}

/*
 * finish_request (and requeue_request): the request leaves the device. A
 * requeued request counts as a completion in the two means (one sample).
 */
static void vel_finish_request(struct request *rq)
{
	struct vel_data *vd = rq->q->elevator->elevator_data;
	int token = rq_token(rq);

	/* Only dispatched requests have a token; held ones have no finish. */
	if (token >= 0) {
		const enum vel_dir dir = rq_data_dir(rq);
		const enum vel_prio c = rq_token_class(rq);
		unsigned int left;
		u64 now;

		rq_clear_priv(rq);
		now = ktime_get_ns();
		if (dir == VEL_READ) {
			/*
			 * The class's last read before its count drops: its
			 * reader never looks gone (vel_read_class).
			 */
			WRITE_ONCE(vd->last_read_ns[c], now);
			/* Pairs with smp_rmb() in vel_read_class(). */
			smp_mb__before_atomic();
			atomic_dec(&vd->reads_on[c]);
		}
		/* Before the token: dispatch woken by it sees the new count. */
		left = atomic_dec_return(&vd->inflight[dir]);
		if (dir == VEL_READ) {
			if (rq->rq_flags & RQF_STATS)
				vel_read_wait(vd, now, rq->io_start_time_ns,
					      atomic_read(&vd->inflight[VEL_WRITE]));
			WRITE_ONCE(vd->read_done_ns, now);
			/* Writes wait for the reader's next read or its end. */
			if (READ_ONCE(vd->antic_waits)) {
				WRITE_ONCE(vd->antic_waits, false);
				blk_mq_run_hw_queues(vd->q, true);
			}
		} else {
			/* Before the queue run below: dispatch sees them. */
			vel_write_done(vd, now, left);
			/* Pairs with smp_mb() in vel_write_room(). */
			smp_mb__after_atomic();
			if (READ_ONCE(vd->write_waits)) {
				WRITE_ONCE(vd->write_waits, false);
				blk_mq_run_hw_queues(vd->q, true);
			}
		}
		vel_put_token(vd, rq, token);
	}
}

/* requeue_request: as finish, and the request's place in requeue order. */
static void vel_requeue_request(struct request *rq)
{
	struct vel_data *vd = rq->q->elevator->elevator_data;

	vel_finish_request(rq);
	rq_take_requeue_seq(rq, &vd->requeue_seq);
}

static struct request *vel_dispatch_request(struct blk_mq_hw_ctx *hctx)
{
	struct vel_data *vd = hctx->queue->elevator->elevator_data;
	struct request *rq = NULL;
	int token = -1;
	enum vel_prio c;
	u64 now;

	spin_lock(&vd->lock);
	/* Under the lock: no timer callback or insert since is in our past. */
	now = ktime_get_ns();
	vd->stats.runs++;
	WRITE_ONCE(vd->kick, false);
	WRITE_ONCE(vd->antic_waits, false);
	if (READ_ONCE(vd->release_all)) {
		WRITE_ONCE(vd->release_all, false);
		if (vd->nr_open)
			vd->stats.waiters++;
		vel_force_all(vd, VEL_CLOSE_WAITER);
	}
	vel_mark_ready(vd, now);
	if (vel_dispatchable(vd))
		token = vel_get_token(vd);
	if (token >= 0) {
		rq = __vel_dispatch(vd, now);
		if (rq && (rq->rq_flags & VEL_RQF_SCHED)) {
			unsigned int n;

			c = vel_ioprio_class(req_get_ioprio(rq));
			rq_set_token(rq, token, c);
			n = atomic_inc_return(&vd->inflight[rq_data_dir(rq)]);
			if (rq_data_dir(rq) == VEL_READ) {
				atomic_inc(&vd->reads_on[c]);
				vel_read_peak_window(vd, now);
				vd->read_peak = max(vd->read_peak, n);
			} else if (vd->turn_ns || !vd->write_turn_ns) {
				/*
				 * The reader's turn ends (or the first write
				 * goes): the writes' turn begins.
				 */
				vd->write_turn_len = vel_write_turn(vd);
				vd->write_turn_ns = now;
				if (vd->turn_ns)
					vd->stats.turns++;
				vd->turn_ns = 0;
			}
		} else {
			vel_put_token(vd, rq, token);
		}
	}
	if (!rq)
		vd->stats.runs_empty++;
	vel_arm_timer(vd, now);
	spin_unlock(&vd->lock);
	return rq;
}

/*
 * True only when dispatch would hand something out: blk-mq re-runs a queue
 * whose has_work is true but whose dispatch gives nothing every 3 ms. Held
 * bundles are the timer's; a wait for a token is the token pool's.
 */
static bool vel_has_work(struct blk_mq_hw_ctx *hctx)
{
	struct vel_data *vd = hctx->queue->elevator->elevator_data;

	if (READ_ONCE(vd->kick) || READ_ONCE(vd->release_all))
		return true;
	if (!list_empty_careful(&vd->token_wait.wait.entry))
		return false;
	/*
	 * Writes wait, and only they have work: for write_depth (a write
	 * completion runs the queue) or for a reader's turn (its read, a read
	 * completion or the timer does).
	 */
	if ((READ_ONCE(vd->write_waits) || READ_ONCE(vd->antic_waits)) &&
	    list_empty_careful(&vd->requeued) &&
	    list_empty_careful(&vd->dispatch) && !vel_queued(vd, VEL_READ))
		return false;
	return vel_dispatchable(vd);
}

/* The queued request that ends at sector @end, as elv_rqhash_find() finds it. */
static struct request *vel_rqhash_find(struct request_queue *q, sector_t end)
{
	struct request *rq;

	hash_for_each_possible(q->elevator->hash, rq, hash, end)
		if (rq_mergeable(rq) &&
		    blk_rq_pos(rq) + blk_rq_sectors(rq) == end)
			return rq;
	return NULL;
}

/*
 * blk_mq_sched_try_insert_merge() merges @rq into q->last_merge if that ends
 * where @rq starts; otherwise into the request the merge hash finds ending
 * there, then that one into its own predecessor, and so on, without asking
 * allow_merge. Let it run only if every request it could merge into is held
 * in one bundle whose erase block holds all the sectors, or none is held:
 * a chain that mixed held and unheld requests would leave a held request's
 * sectors in an unheld one, or the reverse.
 */
static bool vel_insert_merge_ok(struct vel_data *vd, struct request *rq)
{
	struct request_queue *q = rq->q;
	sector_t end = blk_rq_pos(rq) + blk_rq_sectors(rq);
	struct request *into = q->last_merge;
	struct vel_bundle *b;

	if (into && blk_rq_pos(into) + blk_rq_sectors(into) == blk_rq_pos(rq) &&
	    rq_bundle(into) &&
	    !vel_in_bundle(rq_bundle(into), blk_rq_pos(rq), end))
		return false;

	/* Each step starts lower (requests are not empty): the walk ends. */
	into = vel_rqhash_find(q, blk_rq_pos(rq));
	b = into ? rq_bundle(into) : NULL;
	for (; into; into = vel_rqhash_find(q, blk_rq_pos(into))) {
		if (rq_bundle(into) != b)
			return false;
		if (b && !vel_in_bundle(b, blk_rq_pos(into), end))
			return false;
	}
	return true;
}

/*
 * Whether requeue sequence @a comes after @b (31-bit, wrapping).
 */
static bool vel_seq_after(unsigned int a, unsigned int b)
{
	return (int)((a - b) << 1) > 0;
}

/*
 * File a requeued request by its requeue sequence: blk-mq hands a burst of
 * requeues back one by one, newest first on 6.1 (its requeue list is LIFO,
 * re-inserted at the head) and oldest first on 6.12, so the order of the
 * inserts says nothing; the order of requeue_request() calls does.
 */
static void vel_add_requeued(struct vel_data *vd, struct request *rq)
{
	struct request *pos;
	unsigned int seq;

	if (!rq_is_requeued(rq))	/* not through requeue_request() */
		rq_take_requeue_seq(rq, &vd->requeue_seq);
	seq = rq_requeue_seq(rq);
	list_for_each_entry_reverse(pos, &vd->requeued, queuelist) {
		if (!vel_seq_after(rq_requeue_seq(pos), seq)) {
			list_add(&rq->queuelist, &pos->queuelist);
			return;
		}
	}
	list_add(&rq->queuelist, &vd->requeued);
}

/*
 * vel_note_reader: task @pid submitted a read at @now. The table keeps the
 * last VEL_READERS read submitters, most recent first: a known one moves to
 * the front, a new one pushes the last out.
 */
static void vel_note_reader(struct vel_data *vd, pid_t pid, u64 now)
{
	struct vel_reader *r = vd->readers;
	int i;

	lockdep_assert_held(&vd->lock);
	for (i = 0; i < VEL_READERS - 1; i++)
		if (r[i].ns && r[i].pid == pid)
			break;
	/* Field by field: vel_limit_depth() reads the table without the lock. */
	for (; i > 0; i--) {
		WRITE_ONCE(r[i].pid, r[i - 1].pid);
		WRITE_ONCE(r[i].ns, r[i - 1].ns);
	}
	WRITE_ONCE(r[0].pid, pid);
	WRITE_ONCE(r[0].ns, now);
}

/*
 * vel_reader: task @pid submitted a read less than read_active_us ago.
 * Without vd->lock (vel_limit_depth) an entry read while it moves may pair
 * one task's pid with another's time: one request judged wrongly, no more.
 */
static bool vel_reader(struct vel_data *vd, pid_t pid, u64 now)
{
	u64 window = vel_read_active_ns(vd);
	int i;

	for (i = 0; i < VEL_READERS; i++) {
		u64 ns = READ_ONCE(vd->readers[i].ns);

		if (ns && READ_ONCE(vd->readers[i].pid) == pid &&
		    now < ns + window)
			return true;
	}
	return false;
}

/*
 * The submitting task: blk-mq allocates and inserts a new request in its
 * context (submit_bio, or its plug's flush). 0 (none) outside a task and for
 * kernel threads: the flusher's writeback, and the workers of stacked devices
 * (dm-crypt, loop) that submit every task's reads and writes, are no reader
 * waiting on its own writes.
 */
static pid_t vel_submitter(void)
{
	return in_task() && !(current->flags & PF_KTHREAD) ?
	       task_pid_nr(current) : 0;
}

static void vel_insert_request(struct blk_mq_hw_ctx *hctx, struct request *rq,
			       bool at_head, struct list_head *free)
{
	struct request_queue *q = hctx->queue;
	struct vel_data *vd = q->elevator->elevator_data;
	const enum vel_dir dir = rq_data_dir(rq);
	u64 now = ktime_get_ns();
	pid_t pid = vel_submitter();
	bool merged, own;

	lockdep_assert_held(&vd->lock);

	/*
	 * A request that was dispatched once (the driver requeued it) is never
	 * held again, and goes before the queued ones, in requeue order.
	 */
	if (rq->rq_flags & RQF_STARTED) {
		vd->stats.requeued++;
		trace_block_rq_insert(rq);
		vel_add_requeued(vd, rq);
		return;
	}

	rq_clear_priv(rq);
	WRITE_ONCE(vd->antic_waits, false);
	if (dir == VEL_READ) {
		u64 done = READ_ONCE(vd->read_done_ns);

		/* The reader's think time: from a completion to its next read. */
		if (done && !vel_queued(vd, VEL_READ) &&
		    !atomic_read(&vd->inflight[VEL_READ])) {
			u64 gap = min_t(u64, now - done,
					2ULL * vd->anticipate_us * NSEC_PER_USEC);

			vd->think_samples = (7 * vd->think_samples + 256) / 8;
			vd->think_total = (7 * vd->think_total + 256 * gap) / 8;
		}
		WRITE_ONCE(vd->last_read_ns[vel_ioprio_class(req_get_ioprio(rq))],
			   now);
		if (pid)
			vel_note_reader(vd, pid, now);
	} else if (vel_ioprio_class(req_get_ioprio(rq)) < vel_write_class(vd)) {
		/* A higher class's write is not capped (vel_write_room). */
		WRITE_ONCE(vd->write_waits, false);
	}
	/* Before the merge attempt: a merge passes the expiry on (requests_merged). */
	rq->fifo_time = jiffies + msecs_to_jiffies(dir == VEL_READ ?
						   vd->read_expire :
						   vd->write_expire);
	vd->inserting = rq;
	merged = vel_insert_merge_ok(vd, rq) &&
		 blk_mq_sched_try_insert_merge(q, rq, free);
	vd->inserting = NULL;
	if (merged)
		return;

	trace_block_rq_insert(rq);
	vd->stats.queued[dir]++;

	if (at_head) {
		vd->stats.at_head++;
		list_add(&rq->queuelist, &vd->dispatch);
		rq->fifo_time = jiffies;
		return;
	}

	if (rq_mergeable(rq)) {
		elv_rqhash_add(q, rq);
		if (!q->last_merge)
			q->last_merge = rq;
	}
	/*
	 * A write from a task that reads is that reader's own: it waits on it
	 * as on its reads, so it is neither held nor passed by them.
	 */
	own = dir == VEL_WRITE && pid && vel_reader(vd, pid, now);
	if (own) {
		vd->stats.own_writes++;
	} else if (vd->bundling && vel_holdable(rq) &&
		   vel_hold(vd, rq, now)) {
		elv_rb_add(&vd->held_sort, rq);
		vel_arm_timer(vd, now);
		return;
	}
	elv_rb_add(&vel_rq_class(vd, rq)->sort[dir], rq);
	list_add_tail(&rq->queuelist, &vel_rq_class(vd, rq)->fifo[dir]);
	if (own)
		rq_set_own(rq);
	if (dir == VEL_WRITE && rq_waited_write(rq))
		vd->sync_writes++;
}

static void vel_insert_requests(struct blk_mq_hw_ctx *hctx,
				struct list_head *list, vel_insert_t flags)
{
	struct vel_data *vd = hctx->queue->elevator->elevator_data;
	const bool at_head = vel_insert_at_head(flags);
	LIST_HEAD(free);

	spin_lock(&vd->lock);
	while (!list_empty(list)) {
		struct request *rq;

		rq = list_first_entry(list, struct request, queuelist);
		list_del_init(&rq->queuelist);
		vel_insert_request(hctx, rq, at_head, &free);
	}
	spin_unlock(&vd->lock);

	blk_mq_free_requests(&free);
}

static void vel_prepare_request(struct request *rq)
{
	rq_clear_priv(rq);
}

/* Front merge: a bio that ends where a queued request starts. */
static int vel_request_merge(struct request_queue *q, struct request **rq,
			     struct bio *bio)
{
	struct vel_data *vd = q->elevator->elevator_data;
	sector_t sector = bio_end_sector(bio);
	struct request *__rq;

	if (!vd->front_merges)
		return ELEVATOR_NO_MERGE;

	/* Only a request of the bio's class: merges keep the I/O priority. */
	__rq = elv_rb_find(&vd->cls[vel_ioprio_class(bio->bi_ioprio)]
				    .sort[bio_data_dir(bio)], sector);
	if (!__rq && bio_data_dir(bio) == WRITE)
		__rq = elv_rb_find(&vd->held_sort, sector);
	if (__rq && elv_bio_merge_ok(__rq, bio)) {
		*rq = __rq;
		if (blk_discard_mergable(__rq))
			return ELEVATOR_DISCARD_MERGE;
		return ELEVATOR_FRONT_MERGE;
	}
	return ELEVATOR_NO_MERGE;
}

/*
 * A sync bio must not wait in a bundle, and a bundle holds one erase block:
 * keep sync bios and bios from other blocks out of held requests. With
 * front_merges off, no front merges at all.
 */
static bool vel_allow_merge(struct request_queue *q, struct request *rq,
			    struct bio *bio)
{
	struct vel_data *vd = q->elevator->elevator_data;
	struct vel_bundle *b = rq_bundle(rq);

	/*
	 * elv_merge() tries q->last_merge for front merges too, without asking
	 * request_merge: refuse them here so front_merges=0 means none.
	 */
	if (!vd->front_merges && bio_end_sector(bio) == blk_rq_pos(rq))
		return false;
	if (!b)
		return true;
	return !op_is_sync(bio->bi_opf) &&
	       vel_in_bundle(b, bio->bi_iter.bi_sector, bio_end_sector(bio));
}

/*
 * Neighbours for request-to-request merges: the sector-sorted neighbour, but
 * never one in another bundle (or held while @rq is not, or vice versa).
 */
static struct request *vel_neighbour(struct request *rq, struct rb_node *n)
{
	struct request *other = n ? rb_entry_rq(n) : NULL;

	if (other && rq_bundle(other) != rq_bundle(rq))
		return NULL;
	return other;
}

static struct request *vel_next_request(struct request_queue *q,
					struct request *rq)
{
	return vel_neighbour(rq, rb_next(&rq->rb_node));
}

static struct request *vel_former_request(struct request_queue *q,
					  struct request *rq)
{
	return vel_neighbour(rq, rb_prev(&rq->rb_node));
}

/* After a bio merged into @req: re-sort on a front merge, recount. */
static void vel_request_merged(struct request_queue *q, struct request *req,
			       enum elv_merge type)
{
	struct vel_data *vd = q->elevator->elevator_data;
	struct vel_bundle *b = rq_bundle(req);

	vd->stats.merged[rq_data_dir(req)]++;
	if (type == ELEVATOR_FRONT_MERGE) {
		struct rb_root *root = vel_rb_root(vd, req);

		elv_rb_del(root, req);
		elv_rb_add(root, req);
	}
	if (b) {
		b->sectors += blk_rq_sectors(req) - rq_held_sectors(req);
		rq_set_held_sectors(req, blk_rq_sectors(req));
		vel_check_ready(vd, b, ktime_get_ns());
	}
}

/* @next has been merged into @req and is about to be freed. */
static void vel_requests_merged(struct request_queue *q, struct request *req,
				struct request *next)
{
	struct vel_data *vd = q->elevator->elevator_data;
	struct vel_bundle *b = rq_bundle(req);
	const enum vel_dir dir = rq_data_dir(req);

	lockdep_assert_held(&vd->lock);
	vd->stats.merged[dir]++;
	if (next != vd->inserting)
		vd->stats.absorbed[dir]++;
	/*
	 * vel_insert_merge_ok() and vel_neighbour() keep held and unheld
	 * requests apart; should a merge mix them anyway, @next leaves its
	 * bundle and nothing moves between a bundle and the FIFO.
	 */
	WARN_ON_ONCE(next != vd->inserting && rq_bundle(next) != b);

	/* The merged request inherits the earlier expiry and FIFO place. */
	if (!b && !rq_bundle(next) && !list_empty(&req->queuelist) &&
	    !list_empty(&next->queuelist) &&
	    time_before((unsigned long)next->fifo_time,
			(unsigned long)req->fifo_time)) {
		list_move(&req->queuelist, &next->queuelist);
		req->fifo_time = next->fifo_time;
	}
	if (b) {
		/*
		 * @next expires no earlier than @b: it is held in @b or is
		 * being inserted, and @b's oldest write opened it.
		 */
		if (!vel_holdable(next))
			b->forced = VEL_CLOSE_SYNC;
	}
	vel_remove_request(vd, next);
	if (b && rq_bundle(req) == b) {
		b->sectors += blk_rq_sectors(req) - rq_held_sectors(req);
		rq_set_held_sectors(req, blk_rq_sectors(req));
		vel_check_ready(vd, b, ktime_get_ns());
	}
}

static bool vel_bio_merge(struct request_queue *q, struct bio *bio,
			  unsigned int nr_segs)
{
	struct vel_data *vd = q->elevator->elevator_data;
	struct request *free = NULL;
	unsigned int ready;
	bool ret;

	spin_lock(&vd->lock);
	ready = vd->nr_ready;
	ret = blk_mq_sched_try_merge(q, bio, nr_segs, &free);
	ready = vd->nr_ready > ready;
	spin_unlock(&vd->lock);

	if (free)
		blk_mq_free_request(free);
	/*
	 * A merged bio runs no queue, but it may have filled a bundle (or
	 * joined a sync write to it): that bundle may go now.
	 */
	if (ready)
		blk_mq_run_hw_queues(q, true);
	return ret;
}

/*
 * Writeback waiters. fsync, sync_file_range(WAIT) and reclaim wait on pages
 * that background writeback submitted as async writes, which veloces may be
 * holding: a waiter means those writes are not background any more. The
 * folio_wait_writeback tracepoint (in 6.1 and 6.12) fires as a task starts to
 * wait; its probe releases every bundle of the disk the folio belongs to.
 * Looked up by name, so it needs no export; without it the module still
 * works, and waiters wait up to bundle_expire_us.
 */
static LIST_HEAD(vel_instances);
static DEFINE_SPINLOCK(vel_instances_lock);

#ifdef CONFIG_TRACEPOINTS
static struct tracepoint *vel_wait_tp;

static struct gendisk *vel_mapping_disk(struct address_space *mapping)
{
	struct inode *inode = mapping ? mapping->host : NULL;
	struct block_device *bdev = NULL;

	if (!inode || !inode->i_sb)
		return NULL;
	/* Page cache of a block device: the bdev file system's inode. */
	if (S_ISBLK(inode->i_mode) && inode->i_sb->s_magic == BDEVFS_MAGIC)
		bdev = I_BDEV(inode);
	else
		bdev = inode->i_sb->s_bdev;
	return bdev ? bdev->bd_disk : NULL;
}

static void vel_wait_writeback_probe(void *data, struct folio *folio,
				     struct address_space *mapping)
{
	struct gendisk *disk = vel_mapping_disk(mapping);
	struct vel_data *vd;

	if (!disk)
		return;
	rcu_read_lock();
	list_for_each_entry_rcu(vd, &vel_instances, instances) {
		if (vd->q->disk != disk || !READ_ONCE(vd->nr_open))
			continue;
		WRITE_ONCE(vd->release_all, true);
		blk_mq_run_hw_queues(vd->q, true);
	}
	rcu_read_unlock();
}

static void vel_find_tracepoint(struct tracepoint *tp, void *priv)
{
	if (!strcmp(tp->name, "folio_wait_writeback"))
		*(struct tracepoint **)priv = tp;
}

static void vel_waiters_register(void)
{
	struct tracepoint *tp = NULL;

	/* A changed TP_PROTO fails the build here, not the kernel at run time. */
	check_trace_callback_type_folio_wait_writeback(vel_wait_writeback_probe);
	for_each_kernel_tracepoint(vel_find_tracepoint, &tp);
	if (tp && !tracepoint_probe_register(tp, vel_wait_writeback_probe,
					     NULL)) {
		vel_wait_tp = tp;
		return;
	}
	pr_info_once("veloces: no folio_wait_writeback tracepoint: writeback waiters wait up to bundle_expire_us\n");
}

static void vel_waiters_unregister(void)
{
	if (!vel_wait_tp)
		return;
	tracepoint_probe_unregister(vel_wait_tp, vel_wait_writeback_probe,
				    NULL);
	tracepoint_synchronize_unregister();
	vel_wait_tp = NULL;
}
#else
/* Without tracepoints, writeback waiters wait up to bundle_expire_us. */
static void vel_waiters_register(void)
{
}

static void vel_waiters_unregister(void)
{
}
#endif

/*
 * The probe is registered when the module loads and removed when it
 * unloads (veloces_init/veloces_exit), never from init_sched/exit_sched:
 * those run with the queue frozen, and registering turns the tracepoint's
 * static key on under cpus_read_lock(), which would order the freeze (a
 * lock to lockdep since 6.12) before cpu_hotplug_lock. With no veloces
 * instance, the probe finds an empty list and returns.
 */

/* The erase-block size the device reports, in KiB, or the default. */
static int vel_default_bundle_kb(struct request_queue *q)
{
	const struct vel_tunable *t = &vel_tunables[VEL_T_bundle_kb];
	unsigned int io_opt = queue_io_opt(q);
	unsigned int discard = q->limits.discard_granularity;

	if (io_opt >= SZ_64K && io_opt / SZ_1K <= t->max)
		return io_opt / SZ_1K;
	/* eMMC/SD report their preferred erase size as discard granularity. */
	if (discard >= SZ_64K && discard / SZ_1K <= t->max)
		return discard / SZ_1K;
	return t->def;
}

/*
 * Whether a shallow depth limits each sbitmap word (6.1) or the whole map
 * (6.17, and backported to stable series such as 6.12.y). Neither a type nor a
 * macro tells them apart, so the module measures it once at load.
 */
static bool vel_shallow_per_word;

static int vel_probe_shallow_depth(void)
{
	struct sbitmap sb;
	int n = 0;

	/* 64 bits in words of 16; a shallow depth of 4 gets 16 or 4 bits. */
	if (sbitmap_init_node(&sb, 64, 4, GFP_KERNEL, NUMA_NO_NODE, false, true))
		return -ENOMEM;
	while (n < 64 && sbitmap_get_shallow(&sb, 4) >= 0)
		n++;
	sbitmap_free(&sb);
	vel_shallow_per_word = n > 4;
	return 0;
}

/*
 * Writes (sync ones too) may take only async_depth of the scheduler tags, by
 * default half, so a reader always finds one: read preference is worth nothing
 * if reads wait for tags behind a write flood. A reader's own write (its task
 * read less than read_active_us ago) is not limited: the reader waits on
 * it as on its reads, and its next read is submitted only after the write has
 * a tag. On 6.1 the share is converted to each sbitmap word's, from the word's
 * own size: with fewer than 4 tags the map is a single word of that many bits,
 * and the 64-bit word size would let writes take every tag. From the tags' depth as
 * vel_depth_updated() saw it (it runs before q->nr_requests changes), not
 * through data->hctx, which kernels before 6.1.192 set only after limit_depth.
 */
static void vel_limit_depth(blk_opf_t opf, struct blk_mq_alloc_data *data)
{
	struct vel_data *vd = data->q->elevator->elevator_data;
	unsigned int depth = max(1U, READ_ONCE(vd->sched_depth));
	unsigned int async = READ_ONCE(vd->async_depth);
	pid_t pid;

	async = async ? min(async, depth) : max(1U, depth / 2);

	if (op_is_sync(opf) && !op_is_write(opf))
		return;
	pid = op_is_write(opf) ? vel_submitter() : 0;
	if (pid && vel_reader(vd, pid, ktime_get_ns()))
		return;
	if (vel_shallow_per_word) {
		/* A map under 4 tags is one word of depth bits (sbitmap_calculate_shift). */
		unsigned int word = min(1U << READ_ONCE(vd->sched_shift), depth);

		async = max(1U, (async * word + depth - 1) / depth);
	}
	data->shallow_depth = async;
}

/*
 * New scheduler tags (at init, or nr_requests changed): remember their depth
 * for vel_limit_depth(), and allow our minimum shallow depth.
 */
static void vel_depth_updated(struct blk_mq_hw_ctx *hctx)
{
	struct vel_data *vd = hctx->queue->elevator->elevator_data;
	struct sbitmap_queue *bt = &hctx->sched_tags->bitmap_tags;

	WRITE_ONCE(vd->sched_shift, bt->sb.shift);
	WRITE_ONCE(vd->sched_depth, bt->sb.depth);
	sbitmap_queue_min_shallow_depth(bt, 1);
}

static int vel_init_hctx(struct blk_mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	vel_depth_updated(hctx);
	return 0;
}

/*
 * How many requests the device holds at once: the driver tags of every
 * hardware queue (one set when they share tags), less the reserved ones.
 * Tags shared with other queues (NVMe namespaces, SCSI LUNs) are not seen
 * here: a request chosen while another queue holds the tags waits in blk-mq's
 * dispatch list, and blk-mq restarts it when a tag frees.
 */
static unsigned int vel_device_depth(struct request_queue *q)
{
	struct blk_mq_tag_set *set = q->tag_set;
	unsigned int depth = set->queue_depth - set->reserved_tags;

	if (!(set->flags & BLK_MQ_F_TAG_HCTX_SHARED))
		depth *= max(1U, set->nr_hw_queues);
	return max(1U, depth);
}

static int vel_init_sched(struct request_queue *q, struct elevator_type *e)
{
	struct elevator_queue *eq;
	struct vel_data *vd;
	int c;

	eq = elevator_alloc(q, e);
	if (!eq)
		return -ENOMEM;

	vd = kzalloc_node(sizeof(*vd), GFP_KERNEL, q->node);
	if (!vd)
		goto put_eq;
	if (sbitmap_queue_init_node(&vd->tokens, vel_device_depth(q), -1, false,
				    GFP_KERNEL, q->node))
		goto free_vd;
	eq->elevator_data = vd;

	spin_lock_init(&vd->lock);
	vd->q = q;
	INIT_LIST_HEAD(&vd->requeued);
	INIT_LIST_HEAD(&vd->dispatch);
	atomic_set(&vd->requeue_seq, 0);
	for (c = 0; c < VEL_CLASS_NR; c++) {
		struct vel_class *vc = &vd->cls[c];

		INIT_LIST_HEAD(&vc->fifo[VEL_READ]);
		INIT_LIST_HEAD(&vc->fifo[VEL_WRITE]);
		atomic_set(&vd->reads_on[c], 0);
		vc->sort[VEL_READ] = RB_ROOT;
		vc->sort[VEL_WRITE] = RB_ROOT;
		vc->last_dir = VEL_WRITE;
	}
	vd->held_sort = RB_ROOT;
	hash_init(vd->bundles);
	INIT_LIST_HEAD(&vd->open);
	vd->ready = RB_ROOT_CACHED;
	hrtimer_init(&vd->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
	vd->timer.function = vel_timer_fn;
	init_waitqueue_func_entry(&vd->token_wait.wait, vel_token_wake);
	vd->token_wait.wait.private = vd;
	INIT_LIST_HEAD(&vd->token_wait.wait.entry);
	atomic_set(&vd->wait_index, 0);

	for (c = 0; c < VEL_T_NR; c++)
		*vel_field(vd, &vel_tunables[c]) = vel_tunables[c].def;
	/* The defaults that follow the device (veloces-tunables.h). */
	vd->bundle_kb = vel_default_bundle_kb(q);
	vd->device_depth = vel_device_depth(q);
	/*
	 * No limit (docs/kernel.md), within the range sysfs accepts: queue
	 * depth times hardware queues, poll ones included, can pass it.
	 */
	vd->write_depth = min_t(unsigned int, vd->device_depth,
				vel_tunables[VEL_T_write_depth].max);
	atomic_set(&vd->inflight[VEL_READ], 0);
	atomic_set(&vd->inflight[VEL_WRITE], 0);
	/* Zone write plugging would serialise held writes: no bundling. */
	if (blk_queue_is_zoned(q))
		vd->bundling = 0;

	/* One dispatch context for the whole queue, as mq-deadline. */
	blk_queue_flag_set(QUEUE_FLAG_SQ_SCHED, q);
	q->elevator = eq;
	/*
	 * Writeback throttling counts held writes as in flight and would let
	 * only a couple of async writes reach a bundle: off while veloces runs.
	 */
	vel_wbt_disable(eq, q);
	/* Each request's io_start_time_ns: the reads' time on the device. */
	blk_stat_enable_accounting(q);

	spin_lock(&vel_instances_lock);
	list_add_rcu(&vd->instances, &vel_instances);
	spin_unlock(&vel_instances_lock);
	return 0;

free_vd:
	kfree(vd);
put_eq:
	kobject_put(&eq->kobj);
	return -ENOMEM;
}

static void vel_exit_sched(struct elevator_queue *e)
{
	struct vel_data *vd = e->elevator_data;

	spin_lock(&vel_instances_lock);
	list_del_rcu(&vd->instances);
	spin_unlock(&vel_instances_lock);
	/*
	 * No writeback probe sees vd any more. Not kfree_rcu(): a probe that
	 * found vd runs its queue, which must not happen once the elevator
	 * is gone (the queue may be going away, its hardware contexts freed
	 * without a grace period). A grace period per elevator exit is cheap,
	 * and waiting for it with the queue frozen cannot deadlock: the only
	 * reader of vel_instances is the probe, which never waits (it sets a
	 * flag and runs the queue asynchronously), and no RCU reader may sleep
	 * on a freeze. It takes no lock either, so it adds no lock order.
	 */
	synchronize_rcu();

	hrtimer_cancel(&vd->timer);
	if (!list_empty_careful(&vd->token_wait.wait.entry)) {
		spin_lock_irq(&vd->token_ws->wait.lock);
		sbitmap_del_wait_queue(&vd->token_wait);
		spin_unlock_irq(&vd->token_ws->wait.lock);
	}
	blk_stat_disable_accounting(vd->q);
	vel_wbt_enable(e, vd->q);
	WARN_ON_ONCE(vel_queued(vd, VEL_READ) || vel_queued(vd, VEL_WRITE));
	WARN_ON_ONCE(!list_empty(&vd->requeued) || !list_empty(&vd->dispatch));
	WARN_ON_ONCE(vd->nr_held || vd->nr_open || !list_empty(&vd->open) ||
		     !RB_EMPTY_ROOT(&vd->ready.rb_root));
	sbitmap_queue_free(&vd->tokens);
	kfree(vd);
}

/* sysfs: queue/iosched/ */

static ssize_t vel_tunable_show(struct elevator_queue *e, char *page,
				enum vel_tunable_id id)
{
	return sysfs_emit(page, "%d\n",
			  *vel_field(e->elevator_data, &vel_tunables[id]));
}

/* Anything but a decimal int in [min, max] is -EINVAL and changes nothing. */
static ssize_t vel_tunable_store(struct elevator_queue *e, const char *page,
				 size_t count, enum vel_tunable_id id)
{
	const struct vel_tunable *t = &vel_tunables[id];
	struct vel_data *vd = e->elevator_data;
	unsigned int ready;
	bool kick = false;
	int v;

	if (kstrtoint(page, 10, &v) || v < t->min || v > t->max)
		return -EINVAL;
	/* Zoned devices keep bundling off (see vel_init_sched). */
	if (id == VEL_T_bundling && v && blk_queue_is_zoned(vd->q))
		return -EINVAL;
	spin_lock(&vd->lock);
	/* Writes that waited for a reader's turn may go now. */
	if (id == VEL_T_anticipate_us && *vel_field(vd, t) != v) {
		WRITE_ONCE(vd->kick, true);
		kick = true;
	}
	if (*vel_field(vd, t) != v && t->releases_bundles && vd->nr_open) {
		vel_force_all(vd, VEL_CLOSE_RETUNE);
		WRITE_ONCE(vd->kick, true);
		kick = true;
	}
	WRITE_ONCE(*vel_field(vd, t), v);	/* async_depth: limit_depth */
	/* The next bundle's due time may have moved (bundle_expire_us). */
	ready = vd->nr_ready;
	vel_arm_timer(vd, ktime_get_ns());
	if (vd->nr_ready > ready) {
		WRITE_ONCE(vd->kick, true);
		kick = true;
	}
	spin_unlock(&vd->lock);
	if (kick)
		blk_mq_run_hw_queues(vd->q, true);
	return count;
}

/* One show and one store per tunable: elv_fs_entry passes no argument. */
#define VEL_TUNABLE(name, ...)						\
static ssize_t vel_##name##_show(struct elevator_queue *e, char *page)	\
{									\
	return vel_tunable_show(e, page, VEL_T_##name);			\
}									\
static ssize_t vel_##name##_store(struct elevator_queue *e,		\
				  const char *page, size_t count)	\
{									\
	return vel_tunable_store(e, page, count, VEL_T_##name);		\
}

#include "veloces-tunables.h"

static struct elv_fs_entry vel_attrs[] = {
#define VEL_TUNABLE(name, ...)						\
	__ATTR(name, 0644, vel_##name##_show, vel_##name##_store),
#include "veloces-tunables.h"
	__ATTR_NULL
};

#ifdef CONFIG_BLK_DEBUG_FS
/* debugfs: /sys/kernel/debug/block/<disk>/sched/ */
static const char *const vel_close_names[VEL_CLOSE_NR] = {
	[VEL_CLOSE_TIME] = "time",
	[VEL_CLOSE_SIZE] = "size",
	[VEL_CLOSE_EXPIRE] = "expire",
	[VEL_CLOSE_SYNC] = "sync",
	[VEL_CLOSE_WAITER] = "waiter",
	[VEL_CLOSE_RETUNE] = "retune",
	[VEL_CLOSE_MERGED] = "merged",
	[VEL_CLOSE_IDLE] = "idle",
};

static int vel_stats_show(void *data, struct seq_file *m)
{
	struct request_queue *q = data;
	struct vel_data *vd = q->elevator->elevator_data;
	unsigned int held, open, ready, backlog;
	struct vel_stats s;
	u64 think, gap, wait, fast;
	int i, d;

	spin_lock(&vd->lock);
	s = vd->stats;
	held = vd->nr_held;
	open = vd->nr_open;
	ready = vd->nr_ready;
	think = vel_think(vd);
	gap = READ_ONCE(vd->write_gap_ns);
	wait = READ_ONCE(vd->read_wait_ns);
	fast = READ_ONCE(vd->read_fast_ns);
	backlog = vel_write_backlog(vd);
	spin_unlock(&vd->lock);

	for (d = VEL_READ; d <= VEL_WRITE; d++)
		seq_printf(m, "%s queued %llu dispatched %llu merged %llu absorbed %llu expired %llu\n",
			   d == VEL_READ ? "read" : "write", s.queued[d],
			   s.dispatched[d], s.merged[d], s.absorbed[d],
			   s.expired[d]);
	seq_printf(m, "bundles opened %llu", s.bundles_opened);
	for (i = 0; i < VEL_CLOSE_NR; i++)
		seq_printf(m, " closed_%s %llu", vel_close_names[i],
			   s.bundles_closed[i]);
	seq_printf(m, " bundled_writes %llu held %u open %u ready %u spanning %llu\n",
		   s.bundled_writes, held, open, ready, s.spanning);
	seq_printf(m, "requeued %llu\n", s.requeued);
	seq_printf(m, "at_head %llu\n", s.at_head);
	seq_printf(m, "starved %llu\n", s.starved);
	seq_printf(m, "deferred %llu\n", s.deferred);
	seq_printf(m, "capped %llu\n", s.capped);
	seq_printf(m, "runs %llu\n", s.runs);
	seq_printf(m, "runs_empty %llu\n", s.runs_empty);
	seq_printf(m, "waiters %llu\n", s.waiters);
	seq_printf(m, "class rt %llu be %llu idle %llu aged %llu\n",
		   s.class_dispatched[VEL_RT], s.class_dispatched[VEL_BE],
		   s.class_dispatched[VEL_IDLE], s.aged);
	seq_printf(m, "anticipated %llu\n", s.anticipated);
	seq_printf(m, "turns %llu\n", s.turns);
	seq_printf(m, "own_writes %llu\n", s.own_writes);
	seq_printf(m, "think_us %lld\n",
		   think == U64_MAX ? -1LL : (long long)(think / NSEC_PER_USEC));
	seq_printf(m, "write_gap_us %llu\n", div_u64(gap, NSEC_PER_USEC));
	seq_printf(m, "read_wait_us %llu\n", div_u64(wait, NSEC_PER_USEC));
	seq_printf(m, "read_fast_us %llu\n", div_u64(fast, NSEC_PER_USEC));
	seq_printf(m, "backlog %u\n", backlog);
	return 0;
}

static void vel_bundle_show(struct seq_file *m, struct vel_data *vd,
			    struct vel_bundle *b, u64 now)
{
	int why = vel_bundle_ready(vd, b, now);

	seq_printf(m, "block %llu sectors %llu-%llu age_us %llu held %u requests %u ready %s\n",
		   b->block, (u64)b->start, (u64)b->end,
		   div_u64(now - b->opened_ns, NSEC_PER_USEC),
		   b->sectors, b->nr_rqs, why >= 0 ? vel_close_names[why] : "no");
}

/* Held bundles, the ready ones first, each set oldest first. */
static int vel_bundles_show(void *data, struct seq_file *m)
{
	struct request_queue *q = data;
	struct vel_data *vd = q->elevator->elevator_data;
	u64 now = ktime_get_ns();
	struct vel_bundle *b;
	struct rb_node *rb;

	spin_lock(&vd->lock);
	for (rb = rb_first_cached(&vd->ready); rb; rb = rb_next(rb))
		vel_bundle_show(m, vd, rb_entry(rb, struct vel_bundle, ready_node),
				now);
	list_for_each_entry(b, &vd->open, open)
		vel_bundle_show(m, vd, b, now);
	if (vd->draining)
		seq_printf(m, "draining sectors %llu-%llu requests %u\n",
			   (u64)vd->draining->start, (u64)vd->draining->end,
			   vd->draining->nr_rqs);
	spin_unlock(&vd->lock);
	return 0;
}

/* read_fifo and write_fifo are BE's (and unset priorities'), as before. */
#define VEL_FIFO_LIST(name, c, dir)					\
static struct list_head *vel_list_##name(struct vel_data *vd)		\
{									\
	return &vd->cls[c].fifo[dir];					\
}

VEL_FIFO_LIST(read_fifo, VEL_BE, VEL_READ)
VEL_FIFO_LIST(write_fifo, VEL_BE, VEL_WRITE)
VEL_FIFO_LIST(rt_read_fifo, VEL_RT, VEL_READ)
VEL_FIFO_LIST(rt_write_fifo, VEL_RT, VEL_WRITE)
VEL_FIFO_LIST(idle_read_fifo, VEL_IDLE, VEL_READ)
VEL_FIFO_LIST(idle_write_fifo, VEL_IDLE, VEL_WRITE)
#undef VEL_FIFO_LIST

static struct list_head *vel_list_requeued(struct vel_data *vd)
{
	return &vd->requeued;
}

static struct list_head *vel_list_dispatch(struct vel_data *vd)
{
	return &vd->dispatch;
}

#define VEL_DEBUGFS_LIST(name)						\
static void *vel_##name##_start(struct seq_file *m, loff_t *pos)	\
	__acquires(&vd->lock)						\
{									\
	struct request_queue *q = m->private;				\
	struct vel_data *vd = q->elevator->elevator_data;		\
									\
	spin_lock(&vd->lock);						\
	return seq_list_start(vel_list_##name(vd), *pos);		\
}									\
									\
static void *vel_##name##_next(struct seq_file *m, void *v, loff_t *pos) \
{									\
	struct request_queue *q = m->private;				\
	struct vel_data *vd = q->elevator->elevator_data;		\
									\
	return seq_list_next(v, vel_list_##name(vd), pos);		\
}									\
									\
static void vel_##name##_stop(struct seq_file *m, void *v)		\
	__releases(&vd->lock)						\
{									\
	struct request_queue *q = m->private;				\
	struct vel_data *vd = q->elevator->elevator_data;		\
									\
	spin_unlock(&vd->lock);						\
}									\
									\
static const struct seq_operations vel_##name##_seq_ops = {		\
	.start	= vel_##name##_start,					\
	.next	= vel_##name##_next,					\
	.stop	= vel_##name##_stop,					\
	.show	= blk_mq_debugfs_rq_show,				\
}

VEL_DEBUGFS_LIST(read_fifo);
VEL_DEBUGFS_LIST(write_fifo);
VEL_DEBUGFS_LIST(rt_read_fifo);
VEL_DEBUGFS_LIST(rt_write_fifo);
VEL_DEBUGFS_LIST(idle_read_fifo);
VEL_DEBUGFS_LIST(idle_write_fifo);
VEL_DEBUGFS_LIST(requeued);
VEL_DEBUGFS_LIST(dispatch);
#undef VEL_DEBUGFS_LIST

static const struct blk_mq_debugfs_attr vel_queue_debugfs_attrs[] = {
	{"stats", 0400, vel_stats_show},
	{"bundles", 0400, vel_bundles_show},
	{"read_fifo", 0400, .seq_ops = &vel_read_fifo_seq_ops},
	{"write_fifo", 0400, .seq_ops = &vel_write_fifo_seq_ops},
	{"rt_read_fifo", 0400, .seq_ops = &vel_rt_read_fifo_seq_ops},
	{"rt_write_fifo", 0400, .seq_ops = &vel_rt_write_fifo_seq_ops},
	{"idle_read_fifo", 0400, .seq_ops = &vel_idle_read_fifo_seq_ops},
	{"idle_write_fifo", 0400, .seq_ops = &vel_idle_write_fifo_seq_ops},
	{"requeued", 0400, .seq_ops = &vel_requeued_seq_ops},
	{"dispatch", 0400, .seq_ops = &vel_dispatch_seq_ops},
	{},
};
#endif

static struct elevator_type veloces = {
	.ops = {
		.depth_updated		= vel_depth_updated,
		.limit_depth		= vel_limit_depth,
		.init_hctx		= vel_init_hctx,
		.insert_requests	= vel_insert_requests,
		.dispatch_request	= vel_dispatch_request,
		.prepare_request	= vel_prepare_request,
		.finish_request		= vel_finish_request,
		.requeue_request	= vel_requeue_request,
		.next_request		= vel_next_request,
		.former_request		= vel_former_request,
		.bio_merge		= vel_bio_merge,
		.request_merge		= vel_request_merge,
		.allow_merge		= vel_allow_merge,
		.requests_merged	= vel_requests_merged,
		.request_merged		= vel_request_merged,
		.has_work		= vel_has_work,
		.init_sched		= vel_init_sched,
		.exit_sched		= vel_exit_sched,
	},
#ifdef CONFIG_BLK_DEBUG_FS
	.queue_debugfs_attrs = vel_queue_debugfs_attrs,
#endif
	.elevator_attrs = vel_attrs,
	.elevator_name = "veloces",
	.elevator_owner = THIS_MODULE,
};
MODULE_ALIAS("veloces-iosched");

static int __init veloces_init(void)
{
	int ret = vel_probe_shallow_depth();

	if (ret)
		return ret;
	vel_waiters_register();
	ret = elv_register(&veloces);
	if (ret)
		vel_waiters_unregister();
	return ret;
}

static void __exit veloces_exit(void)
{
	elv_unregister(&veloces);
	vel_waiters_unregister();
}

module_init(veloces_init);
module_exit(veloces_exit);

MODULE_AUTHOR("The Veloces authors");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Veloces: flash-aware I/O scheduler with erase-block write bundling");
