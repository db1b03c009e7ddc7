// SPDX-License-Identifier: GPL-2.0
/*
 * Veloces: a flash-aware blk-mq I/O scheduler.
 *
 * Policy (see docs/kernel.md):
 *  - Reads are preferred. Reads and dispatchable writes each have a FIFO
 *    (arrival order, with an expiry time) and a sector-sorted tree; requests
 *    are dispatched in sector order within a batch of fifo_batch requests.
 *  - Asynchronous data writes are bundled by logical erase block
 *    (sector / (bundle_kb * 2)). A bundle opens with its first write and is
 *    ready when bundle_expire_us has passed since it opened, when it holds an
 *    erase block's worth of sectors, or when its oldest write reaches
 *    write_expire. Ready bundles are dispatched whole, in sector order, oldest
 *    first, so the device sees each erase block's writes back to back.
 *  - Synchronous writes (REQ_SYNC, REQ_FUA, REQ_PREFLUSH) are never held.
 *  - While reads wait, writes go only after writes_starved read batches, or
 *    when a write or a bundle has expired.
 *  - Back merges and (with front_merges) front merges.
 *  - has_work is true while anything is held, and a timer re-runs the queue
 *    when the next held bundle becomes ready, so an idle queue never stalls.
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

#include <trace/events/block.h>

#include "elevator.h"
#include "blk.h"
#include "blk-mq.h"
#include "blk-mq-debugfs.h"
#include "blk-mq-sched.h"
#include "blk-wbt.h"

/* Defaults; see docs/kernel.md for the evidence behind them. */
static const int read_expire_ms = 100;
static const int write_expire_ms = 1000;
static const int writes_starved = 2;
static const int fifo_batch = 16;
static const int bundle_kb_default = 512;
static const int bundle_expire_us_default = 2000;

/* Limits the sysfs tunables accept. */
#define VEL_EXPIRE_MS_MAX	600000
#define VEL_FIFO_BATCH_MAX	1024
#define VEL_STARVED_MAX		1024
#define VEL_BUNDLE_KB_MIN	4
#define VEL_BUNDLE_KB_MAX	(1024 * 1024)
#define VEL_BUNDLE_US_MAX	10000000

#define VEL_BUNDLE_HASH_BITS	6

enum vel_dir {
	VEL_READ = READ,
	VEL_WRITE = WRITE,
};

enum vel_close {
	VEL_CLOSE_TIME,		/* bundle_expire_us since it opened */
	VEL_CLOSE_SIZE,		/* a full erase block */
	VEL_CLOSE_EXPIRE,	/* oldest write reached write_expire */
	VEL_CLOSE_SYNC,		/* a synchronous write was merged into it */
	VEL_CLOSE_NR,
};

struct vel_stats {
	u64 queued[2];
	u64 dispatched[2];
	u64 merged[2];
	u64 expired[2];		/* dispatches that started from an expired FIFO head */
	u64 bundles_opened;
	u64 bundles_closed[VEL_CLOSE_NR];
	u64 bundled_writes;	/* writes dispatched as part of a bundle */
	u64 starved;		/* write batches forced by writes_starved */
	u64 deferred;		/* dispatches put off for want of a driver tag */
};

/* Async writes to one logical erase block, held until the bundle is ready. */
struct vel_bundle {
	struct hlist_node hash;		/* vel_data.bundles, keyed by block */
	struct list_head open;		/* vel_data.open, in opening order */
	struct list_head rqs;		/* requests, sorted by sector */
	u64 block;
	u64 opened_ns;
	unsigned long deadline;		/* earliest write expiry, jiffies */
	unsigned int sectors;
	bool sync;			/* a sync write joined: flush it now */
};

struct vel_data {
	spinlock_t lock;		/* everything below but the timer */
	struct request_queue *q;

	struct list_head dispatch;	/* at-head inserts */
	struct list_head fifo[2];	/* reads; dispatchable writes */
	struct rb_root sort[2];
	struct rb_root held_sort;	/* bundled writes, for front merges */
	struct request *next_rq[2];	/* next in sector order in a batch */

	DECLARE_HASHTABLE(bundles, VEL_BUNDLE_HASH_BITS);
	struct list_head open;		/* open bundles, oldest first */
	unsigned int nr_held;
	struct vel_bundle *draining;	/* bundle being dispatched */

	unsigned int batching;
	unsigned int starved;
	enum vel_dir last_dir;

	struct hrtimer timer;
	struct vel_stats stats;

	/* tunables */
	int read_expire;		/* ms */
	int write_expire;		/* ms */
	int fifo_batch;
	int writes_starved;
	int front_merges;
	int bundle_kb;
	int bundle_expire_us;
	int bundling;
};

static inline struct vel_bundle *rq_bundle(struct request *rq)
{
	return rq->elv.priv[0];
}

static inline unsigned int rq_accounted(struct request *rq)
{
	return (unsigned int)(uintptr_t)rq->elv.priv[1];
}

static inline void rq_set_accounted(struct request *rq, unsigned int sectors)
{
	rq->elv.priv[1] = (void *)(uintptr_t)sectors;
}

/* Data writes the scheduler may hold back: not sync, FUA or preflush. */
static bool vel_holdable(struct request *rq)
{
	return req_op(rq) == REQ_OP_WRITE && !op_is_sync(rq->cmd_flags);
}

static struct rb_root *vel_rb_root(struct vel_data *vd, struct request *rq)
{
	if (rq_bundle(rq))
		return &vd->held_sort;
	return &vd->sort[rq_data_dir(rq)];
}

static u64 vel_bundle_sectors(struct vel_data *vd)
{
	return (u64)vd->bundle_kb * 2;
}

static u64 vel_bundle_ready_ns(struct vel_data *vd, struct vel_bundle *b)
{
	return b->opened_ns + (u64)vd->bundle_expire_us * NSEC_PER_USEC;
}

/*
 * Why @b is ready to go, or -1 if it must still be held. Size and sync are
 * checked first so the reason recorded is the most specific one.
 */
static int vel_bundle_ready(struct vel_data *vd, struct vel_bundle *b, u64 now)
{
	if (b->sync)
		return VEL_CLOSE_SYNC;
	if (b->sectors >= vel_bundle_sectors(vd))
		return VEL_CLOSE_SIZE;
	if (time_is_before_eq_jiffies(b->deadline))
		return VEL_CLOSE_EXPIRE;
	if (now >= vel_bundle_ready_ns(vd, b))
		return VEL_CLOSE_TIME;
	return -1;
}

/* The oldest ready bundle, with its close reason in @reason. */
static struct vel_bundle *vel_ready_bundle(struct vel_data *vd, int *reason)
{
	u64 now = ktime_get_ns();
	struct vel_bundle *b;

	list_for_each_entry(b, &vd->open, open) {
		*reason = vel_bundle_ready(vd, b, now);
		if (*reason >= 0)
			return b;
	}
	return NULL;
}

/* Arm the timer for the moment the next held bundle becomes ready. */
static void vel_arm_timer(struct vel_data *vd)
{
	u64 now = ktime_get_ns(), when = U64_MAX;
	struct vel_bundle *b;

	list_for_each_entry(b, &vd->open, open) {
		u64 t = vel_bundle_ready_ns(vd, b);
		long left = (long)(b->deadline - jiffies);
		u64 exp = now + (left > 0 ? jiffies_to_nsecs(left) : 0);

		when = min3(when, t, exp);
	}
	if (when == U64_MAX)
		return;
	hrtimer_start(&vd->timer, ns_to_ktime(when > now ? when - now : 0),
		      HRTIMER_MODE_REL_SOFT);
}

static enum hrtimer_restart vel_timer_fn(struct hrtimer *timer)
{
	struct vel_data *vd = container_of(timer, struct vel_data, timer);

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

	list_for_each_entry_reverse(pos, &b->rqs, queuelist) {
		if (blk_rq_pos(pos) <= blk_rq_pos(rq)) {
			list_add(&rq->queuelist, &pos->queuelist);
			return;
		}
	}
	list_add(&rq->queuelist, &b->rqs);
}

/* Hold @rq in its erase block's bundle; false if no bundle could be had. */
static bool vel_hold(struct vel_data *vd, struct request *rq)
{
	u64 block = div64_u64(blk_rq_pos(rq), vel_bundle_sectors(vd));
	struct vel_bundle *b = vel_find_bundle(vd, block);

	if (!b) {
		b = kmalloc_node(sizeof(*b), GFP_NOWAIT | __GFP_NOWARN,
				 vd->q->node);
		if (!b)
			return false;
		b->block = block;
		b->opened_ns = ktime_get_ns();
		b->deadline = (unsigned long)rq->fifo_time;
		b->sectors = 0;
		b->sync = false;
		INIT_LIST_HEAD(&b->rqs);
		hash_add(vd->bundles, &b->hash, block);
		list_add_tail(&b->open, &vd->open);
		vd->stats.bundles_opened++;
	}
	rq->elv.priv[0] = b;
	rq_set_accounted(rq, blk_rq_sectors(rq));
	b->sectors += blk_rq_sectors(rq);
	if (time_before((unsigned long)rq->fifo_time, b->deadline))
		b->deadline = (unsigned long)rq->fifo_time;
	vel_bundle_add_rq(b, rq);
	vd->nr_held++;
	return true;
}

static void vel_bundle_close(struct vel_data *vd, struct vel_bundle *b,
			     int reason)
{
	hash_del(&b->hash);
	list_del_init(&b->open);
	vd->stats.bundles_closed[reason]++;
}

/* Take @rq off every list and tree it is on; free its bundle if emptied. */
static void vel_remove_request(struct vel_data *vd, struct request *rq)
{
	struct request_queue *q = rq->q;
	struct vel_bundle *b = rq_bundle(rq);
	const enum vel_dir dir = rq_data_dir(rq);

	if (vd->next_rq[dir] == rq) {
		struct rb_node *n = rb_next(&rq->rb_node);

		vd->next_rq[dir] = n ? rb_entry_rq(n) : NULL;
	}
	list_del_init(&rq->queuelist);
	if (!RB_EMPTY_NODE(&rq->rb_node))
		elv_rb_del(vel_rb_root(vd, rq), rq);
	elv_rqhash_del(q, rq);
	if (q->last_merge == rq)
		q->last_merge = NULL;

	if (!b)
		return;
	b->sectors -= min(b->sectors, rq_accounted(rq));
	vd->nr_held--;
	rq->elv.priv[0] = NULL;
	if (list_empty(&b->rqs)) {
		/* Emptied by merges while still open: it never became ready. */
		if (!list_empty(&b->open)) {
			hash_del(&b->hash);
			list_del(&b->open);
		}
		if (vd->draining == b)
			vd->draining = NULL;
		kfree(b);
	}
}

/* Hand @rq to the driver: update batch position and statistics. */
static struct request *vel_start(struct vel_data *vd, struct request *rq)
{
	const enum vel_dir dir = rq_data_dir(rq);

	if (rq_bundle(rq)) {
		vd->stats.bundled_writes++;
	} else {
		struct rb_node *n = rb_next(&rq->rb_node);

		vd->next_rq[VEL_READ] = NULL;
		vd->next_rq[VEL_WRITE] = NULL;
		vd->next_rq[dir] = n ? rb_entry_rq(n) : NULL;
	}
	vel_remove_request(vd, rq);
	vd->stats.dispatched[dir]++;
	rq->rq_flags |= RQF_STARTED;
	return rq;
}

static inline struct request *vel_fifo_head(struct vel_data *vd,
					    enum vel_dir dir)
{
	return list_first_entry_or_null(&vd->fifo[dir], struct request,
					queuelist);
}

static bool vel_fifo_expired(struct vel_data *vd, enum vel_dir dir)
{
	struct request *rq = vel_fifo_head(vd, dir);

	return rq && time_is_before_eq_jiffies((unsigned long)rq->fifo_time);
}

/* Bundle @b leaves the open set and drains whole; returns its first write. */
static struct request *vel_start_bundle(struct vel_data *vd,
					struct vel_bundle *b, int reason)
{
	vel_bundle_close(vd, b, reason);
	vd->draining = b;
	vd->next_rq[VEL_WRITE] = NULL;	/* after the bundle, choose afresh */
	vd->starved = 0;
	vd->last_dir = VEL_WRITE;
	vd->batching = 0;
	return list_first_entry(&b->rqs, struct request, queuelist);
}

/*
 * Write batch: the older of the dispatchable-write FIFO head and the oldest
 * ready bundle goes first.
 */
static struct request *vel_dispatch_writes(struct vel_data *vd,
					   struct vel_bundle *b, int reason)
{
	struct request *head = vel_fifo_head(vd, VEL_WRITE), *rq;

	if (b && (!head || !time_before((unsigned long)head->fifo_time,
					b->deadline)))
		return vel_start_bundle(vd, b, reason);
	if (!head)
		return NULL;

	vd->starved = 0;
	rq = vd->next_rq[VEL_WRITE];
	if (vel_fifo_expired(vd, VEL_WRITE) || !rq) {
		if (vel_fifo_expired(vd, VEL_WRITE))
			vd->stats.expired[VEL_WRITE]++;
		rq = head;
	}
	vd->last_dir = VEL_WRITE;
	vd->batching = 0;
	return rq;
}

static struct request *vel_dispatch_reads(struct vel_data *vd)
{
	struct request *rq = vd->next_rq[VEL_READ];

	if (vel_fifo_expired(vd, VEL_READ) || !rq) {
		if (vel_fifo_expired(vd, VEL_READ))
			vd->stats.expired[VEL_READ]++;
		rq = vel_fifo_head(vd, VEL_READ);
	}
	vd->last_dir = VEL_READ;
	vd->batching = 0;
	return rq;
}

static struct request *__vel_dispatch(struct vel_data *vd)
{
	struct vel_bundle *b;
	struct request *rq;
	bool reads, writes, write_due;
	int reason = -1;

	lockdep_assert_held(&vd->lock);

	rq = list_first_entry_or_null(&vd->dispatch, struct request, queuelist);
	if (rq) {
		list_del_init(&rq->queuelist);
		vd->stats.dispatched[rq_data_dir(rq)]++;
		rq->rq_flags |= RQF_STARTED;
		return rq;
	}

	/* A bundle goes out whole, so the device sees its block at once. */
	if (vd->draining)
		return vel_start(vd, list_first_entry(&vd->draining->rqs,
						      struct request,
						      queuelist));

	/*
	 * Continue the batch in sector order. Waiting reads end a write batch:
	 * writes that must go (starved or expired) win the next choice anyway.
	 */
	rq = vd->next_rq[vd->last_dir];
	if (rq && vd->batching < vd->fifo_batch &&
	    !vel_fifo_expired(vd, vd->last_dir) &&
	    (vd->last_dir == VEL_READ || list_empty(&vd->fifo[VEL_READ])))
		goto dispatch;

	b = vel_ready_bundle(vd, &reason);
	reads = !list_empty(&vd->fifo[VEL_READ]);
	writes = b || !list_empty(&vd->fifo[VEL_WRITE]);
	write_due = vel_fifo_expired(vd, VEL_WRITE) ||
		    reason == VEL_CLOSE_EXPIRE;

	if (reads && !(writes && write_due)) {
		if (!writes || vd->starved++ < vd->writes_starved) {
			rq = vel_dispatch_reads(vd);
			goto dispatch;
		}
		vd->stats.starved++;
	}
	if (!writes)
		return NULL;
	rq = vel_dispatch_writes(vd, b, reason);
	if (!rq)
		return NULL;

dispatch:
	vd->batching++;
	return vel_start(vd, rq);
}

/*
 * Whether the device has a free driver tag. A request handed out without one
 * waits in the hardware queue's dispatch list, ahead of anything chosen later:
 * a write parked there delays the next read by a whole service time.
 */
static bool vel_driver_tag_free(struct blk_mq_hw_ctx *hctx)
{
	struct sbitmap_queue *bt = &hctx->tags->bitmap_tags;

	return sbitmap_weight(&bt->sb) < bt->sb.depth;
}

static struct request *vel_dispatch_request(struct blk_mq_hw_ctx *hctx)
{
	struct vel_data *vd = hctx->queue->elevator->elevator_data;
	struct request *rq = NULL;

	spin_lock(&vd->lock);
	/*
	 * With no free tag, choose later: the completion that frees a tag
	 * restarts the queue (blk-mq also re-runs a queue that has work after
	 * 3 ms). Choosing now would park the request in the hardware queue's
	 * dispatch list, decided before the requests that arrive meanwhile
	 * (a read, a merge candidate, a batch's next sector) were seen.
	 */
	if (list_empty(&vd->dispatch) && !vel_driver_tag_free(hctx)) {
		blk_mq_sched_mark_restart_hctx(hctx);
		vd->stats.deferred++;
	} else {
		rq = __vel_dispatch(vd);
	}
	if (!rq && vd->nr_held)
		vel_arm_timer(vd);
	spin_unlock(&vd->lock);
	return rq;
}

static bool vel_has_work(struct blk_mq_hw_ctx *hctx)
{
	struct vel_data *vd = hctx->queue->elevator->elevator_data;

	return !list_empty_careful(&vd->dispatch) ||
	       !list_empty_careful(&vd->fifo[VEL_READ]) ||
	       !list_empty_careful(&vd->fifo[VEL_WRITE]) ||
	       READ_ONCE(vd->nr_held);
}

/* The queued request in @root that ends at sector @end, if any. */
static struct request *vel_ending_at(struct rb_root *root, sector_t end)
{
	struct rb_node *n = root->rb_node;
	struct request *best = NULL;

	while (n) {
		struct request *rq = rb_entry_rq(n);

		if (blk_rq_pos(rq) < end) {
			best = rq;
			n = n->rb_right;
		} else {
			n = n->rb_left;
		}
	}
	if (best && blk_rq_pos(best) + blk_rq_sectors(best) == end)
		return best;
	return NULL;
}

/*
 * blk_mq_sched_try_insert_merge() back-merges @rq into a queued request that
 * ends where @rq starts, then that one into its own predecessor, and so on,
 * without asking allow_merge. Let it run only if no step would put sectors of
 * another erase block into a held request.
 */
static bool vel_insert_merge_ok(struct vel_data *vd, struct request *rq)
{
	const enum vel_dir dir = rq_data_dir(rq);
	u64 bs = vel_bundle_sectors(vd);
	sector_t end = blk_rq_pos(rq) + blk_rq_sectors(rq);
	sector_t start = blk_rq_pos(rq);
	struct request *into;

	for (;;) {
		into = vel_ending_at(&vd->sort[dir], start);
		if (!into && dir == VEL_WRITE)
			into = vel_ending_at(&vd->held_sort, start);
		if (!into)
			return true;
		start = blk_rq_pos(into);
		if (rq_bundle(into) &&
		    (div64_u64(start, bs) != rq_bundle(into)->block ||
		     div64_u64(end - 1, bs) != rq_bundle(into)->block))
			return false;
	}
}

static void vel_insert_request(struct blk_mq_hw_ctx *hctx, struct request *rq,
			       bool at_head, struct list_head *free)
{
	struct request_queue *q = hctx->queue;
	struct vel_data *vd = q->elevator->elevator_data;
	const enum vel_dir dir = rq_data_dir(rq);

	lockdep_assert_held(&vd->lock);

	rq->elv.priv[0] = NULL;
	/* Before the merge attempt: a merge passes the expiry on (requests_merged). */
	rq->fifo_time = jiffies + msecs_to_jiffies(dir == VEL_READ ?
						   vd->read_expire :
						   vd->write_expire);
	if (vel_insert_merge_ok(vd, rq) &&
	    blk_mq_sched_try_insert_merge(q, rq, free))
		return;

	trace_block_rq_insert(rq);
	vd->stats.queued[dir]++;

	if (at_head) {
		list_add(&rq->queuelist, &vd->dispatch);
		rq->fifo_time = jiffies;
		return;
	}

	if (rq_mergeable(rq)) {
		elv_rqhash_add(q, rq);
		if (!q->last_merge)
			q->last_merge = rq;
	}
	if (vd->bundling && vel_holdable(rq) && vel_hold(vd, rq)) {
		elv_rb_add(&vd->held_sort, rq);
		return;
	}
	elv_rb_add(&vd->sort[dir], rq);
	list_add_tail(&rq->queuelist, &vd->fifo[dir]);
}

static void __vel_insert_requests(struct blk_mq_hw_ctx *hctx,
				  struct list_head *list, bool at_head)
{
	struct vel_data *vd = hctx->queue->elevator->elevator_data;
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

#ifdef BLK_MQ_INSERT_AT_HEAD
/* 6.5 and later pass flags instead of at_head. */
static void vel_insert_requests(struct blk_mq_hw_ctx *hctx,
				struct list_head *list, blk_insert_t flags)
{
	__vel_insert_requests(hctx, list, !!(flags & BLK_MQ_INSERT_AT_HEAD));
}
#else
static void vel_insert_requests(struct blk_mq_hw_ctx *hctx,
				struct list_head *list, bool at_head)
{
	__vel_insert_requests(hctx, list, at_head);
}
#endif

static void vel_prepare_request(struct request *rq)
{
	rq->elv.priv[0] = NULL;
	rq->elv.priv[1] = NULL;
}

/*
 * Mandatory since 6.x (elv_register() refuses a scheduler without it). May run
 * in interrupt context, and for requests that never reached insert; veloces
 * drops its per-request state at dispatch, so there is nothing to release.
 */
static void vel_finish_request(struct request *rq)
{
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

	__rq = elv_rb_find(&vd->sort[bio_data_dir(bio)], sector);
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
	u64 bs = vel_bundle_sectors(vd);

	/*
	 * elv_merge() tries q->last_merge for front merges too, without asking
	 * request_merge: refuse them here so front_merges=0 means none.
	 */
	if (!vd->front_merges && bio_end_sector(bio) == blk_rq_pos(rq))
		return false;
	if (!b)
		return true;
	return !op_is_sync(bio->bi_opf) &&
	       div64_u64(bio->bi_iter.bi_sector, bs) == b->block &&
	       div64_u64(bio_end_sector(bio) - 1, bs) == b->block;
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
		b->sectors += blk_rq_sectors(req) - rq_accounted(req);
		rq_set_accounted(req, blk_rq_sectors(req));
	}
}

/* @next has been merged into @req and is about to be freed. */
static void vel_requests_merged(struct request_queue *q, struct request *req,
				struct request *next)
{
	struct vel_data *vd = q->elevator->elevator_data;
	struct vel_bundle *b = rq_bundle(req);

	lockdep_assert_held(&vd->lock);
	vd->stats.merged[rq_data_dir(req)]++;

	/* The merged request inherits the earlier expiry and FIFO place. */
	if (!b && !list_empty(&req->queuelist) &&
	    !list_empty(&next->queuelist) &&
	    time_before((unsigned long)next->fifo_time,
			(unsigned long)req->fifo_time)) {
		list_move(&req->queuelist, &next->queuelist);
		req->fifo_time = next->fifo_time;
	}
	if (b) {
		if (!vel_holdable(next))
			b->sync = true;
		if (time_before((unsigned long)next->fifo_time, b->deadline))
			b->deadline = (unsigned long)next->fifo_time;
	}
	vel_remove_request(vd, next);
	if (b && rq_bundle(req) == b) {
		b->sectors += blk_rq_sectors(req) - rq_accounted(req);
		rq_set_accounted(req, blk_rq_sectors(req));
	}
}

static bool vel_bio_merge(struct request_queue *q, struct bio *bio,
			  unsigned int nr_segs)
{
	struct vel_data *vd = q->elevator->elevator_data;
	struct request *free = NULL;
	bool ret;

	spin_lock(&vd->lock);
	ret = blk_mq_sched_try_merge(q, bio, nr_segs, &free);
	spin_unlock(&vd->lock);

	if (free)
		blk_mq_free_request(free);
	return ret;
}

/* The erase-block size the device reports, in KiB, or the default. */
static int vel_default_bundle_kb(struct request_queue *q)
{
	unsigned int io_opt = queue_io_opt(q);
	unsigned int discard = q->limits.discard_granularity;

	if (io_opt >= SZ_64K && io_opt / SZ_1K <= VEL_BUNDLE_KB_MAX)
		return io_opt / SZ_1K;
	/* eMMC/SD report their preferred erase size as discard granularity. */
	if (discard >= SZ_64K && discard / SZ_1K <= VEL_BUNDLE_KB_MAX)
		return discard / SZ_1K;
	return bundle_kb_default;
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
 * Writes may take only 3/4 of the scheduler tags, so a read always finds one:
 * read preference is worth nothing if reads wait for tags behind a write
 * flood. Computed from the tags' current depth, because depth_updated() runs
 * before q->nr_requests changes.
 */
static void vel_limit_depth(blk_opf_t opf, struct blk_mq_alloc_data *data)
{
	struct sbitmap_queue *bt = &data->hctx->sched_tags->bitmap_tags;
	unsigned int depth = bt->sb.depth;
	unsigned int async = max(1U, 3 * depth / 4);

	if (op_is_sync(opf) && !op_is_write(opf))
		return;
	if (vel_shallow_per_word)
		async = max(1U, ((async << bt->sb.shift) + depth - 1) / depth);
	data->shallow_depth = async;
}

/* New scheduler tags start with no minimum shallow depth: allow ours. */
static void vel_depth_updated(struct blk_mq_hw_ctx *hctx)
{
	sbitmap_queue_min_shallow_depth(&hctx->sched_tags->bitmap_tags, 1);
}

static int vel_init_hctx(struct blk_mq_hw_ctx *hctx, unsigned int hctx_idx)
{
	vel_depth_updated(hctx);
	return 0;
}

/*
 * wbt_{enable,disable}_default() took the request_queue and later the gendisk:
 * the argument is chosen by the function's type, at compile time.
 */
static void *vel_wbt_arg(struct request_queue *q)
{
	if (__builtin_types_compatible_p(typeof(wbt_disable_default),
					 void (struct gendisk *)))
		return q->disk;
	return q;
}

static int vel_init_sched(struct request_queue *q, struct elevator_type *e)
{
	struct elevator_queue *eq;
	struct vel_data *vd;

	eq = elevator_alloc(q, e);
	if (!eq)
		return -ENOMEM;

	vd = kzalloc_node(sizeof(*vd), GFP_KERNEL, q->node);
	if (!vd) {
		kobject_put(&eq->kobj);
		return -ENOMEM;
	}
	eq->elevator_data = vd;

	spin_lock_init(&vd->lock);
	vd->q = q;
	INIT_LIST_HEAD(&vd->dispatch);
	INIT_LIST_HEAD(&vd->fifo[VEL_READ]);
	INIT_LIST_HEAD(&vd->fifo[VEL_WRITE]);
	vd->sort[VEL_READ] = RB_ROOT;
	vd->sort[VEL_WRITE] = RB_ROOT;
	vd->held_sort = RB_ROOT;
	hash_init(vd->bundles);
	INIT_LIST_HEAD(&vd->open);
	hrtimer_init(&vd->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_SOFT);
	vd->timer.function = vel_timer_fn;

	vd->read_expire = read_expire_ms;
	vd->write_expire = write_expire_ms;
	vd->fifo_batch = fifo_batch;
	vd->writes_starved = writes_starved;
	vd->front_merges = 1;
	vd->bundle_kb = vel_default_bundle_kb(q);
	vd->bundle_expire_us = bundle_expire_us_default;
	vd->bundling = 1;
	vd->last_dir = VEL_WRITE;

	/* One dispatch context for the whole queue, as mq-deadline. */
	blk_queue_flag_set(QUEUE_FLAG_SQ_SCHED, q);
	q->elevator = eq;
	/*
	 * Writeback throttling counts held writes as in flight and would let
	 * only a couple of async writes reach a bundle: turn it off while
	 * veloces runs, as BFQ does.
	 */
#ifdef ELEVATOR_FLAG_DISABLE_WBT
	set_bit(ELEVATOR_FLAG_DISABLE_WBT, &eq->flags);
#endif
	wbt_disable_default(vel_wbt_arg(q));
	return 0;
}

static void vel_exit_sched(struct elevator_queue *e)
{
	struct vel_data *vd = e->elevator_data;

	hrtimer_cancel(&vd->timer);
#ifdef ELEVATOR_FLAG_DISABLE_WBT
	clear_bit(ELEVATOR_FLAG_DISABLE_WBT, &e->flags);
#endif
	wbt_enable_default(vel_wbt_arg(vd->q));
	WARN_ON_ONCE(!list_empty(&vd->fifo[VEL_READ]));
	WARN_ON_ONCE(!list_empty(&vd->fifo[VEL_WRITE]));
	WARN_ON_ONCE(vd->nr_held || !list_empty(&vd->open));
	kfree(vd);
}

/* sysfs: queue/iosched/ */

/* A tunable: its range and where it lives. */
struct vel_tunable {
	int min;
	int max;
	size_t offset;			/* of the int in struct vel_data */
};

static int *vel_field(struct vel_data *vd, const struct vel_tunable *t)
{
	return (int *)((char *)vd + t->offset);
}

static ssize_t vel_tunable_show(struct elevator_queue *e, char *page,
				const struct vel_tunable *t)
{
	return sysfs_emit(page, "%d\n", *vel_field(e->elevator_data, t));
}

/* Anything but a decimal int in [min, max] is -EINVAL and changes nothing. */
static ssize_t vel_tunable_store(struct elevator_queue *e, const char *page,
				 size_t count, const struct vel_tunable *t)
{
	struct vel_data *vd = e->elevator_data;
	int v;

	if (kstrtoint(page, 10, &v) || v < t->min || v > t->max)
		return -EINVAL;
	spin_lock(&vd->lock);
	*vel_field(vd, t) = v;
	spin_unlock(&vd->lock);
	return count;
}

#define VEL_TUNABLE(name, lo, hi)					\
static const struct vel_tunable vel_##name##_tunable = {		\
	.min = (lo), .max = (hi),					\
	.offset = offsetof(struct vel_data, name),			\
};									\
static ssize_t vel_##name##_show(struct elevator_queue *e, char *page)	\
{									\
	return vel_tunable_show(e, page, &vel_##name##_tunable);	\
}									\
static ssize_t vel_##name##_store(struct elevator_queue *e,		\
				  const char *page, size_t count)	\
{									\
	return vel_tunable_store(e, page, count, &vel_##name##_tunable);	\
}

VEL_TUNABLE(read_expire, 1, VEL_EXPIRE_MS_MAX)
VEL_TUNABLE(write_expire, 1, VEL_EXPIRE_MS_MAX)
VEL_TUNABLE(fifo_batch, 1, VEL_FIFO_BATCH_MAX)
VEL_TUNABLE(writes_starved, 1, VEL_STARVED_MAX)
VEL_TUNABLE(front_merges, 0, 1)
VEL_TUNABLE(bundle_kb, VEL_BUNDLE_KB_MIN, VEL_BUNDLE_KB_MAX)
VEL_TUNABLE(bundle_expire_us, 1, VEL_BUNDLE_US_MAX)
VEL_TUNABLE(bundling, 0, 1)

#define VEL_ATTR(name) \
	__ATTR(name, 0644, vel_##name##_show, vel_##name##_store)

static struct elv_fs_entry vel_attrs[] = {
	VEL_ATTR(read_expire),
	VEL_ATTR(write_expire),
	VEL_ATTR(fifo_batch),
	VEL_ATTR(writes_starved),
	VEL_ATTR(front_merges),
	VEL_ATTR(bundle_kb),
	VEL_ATTR(bundle_expire_us),
	VEL_ATTR(bundling),
	__ATTR_NULL
};

#ifdef CONFIG_BLK_DEBUG_FS
/* debugfs: /sys/kernel/debug/block/<disk>/sched/ */
static const char *const vel_close_names[VEL_CLOSE_NR] = {
	[VEL_CLOSE_TIME] = "time",
	[VEL_CLOSE_SIZE] = "size",
	[VEL_CLOSE_EXPIRE] = "expire",
	[VEL_CLOSE_SYNC] = "sync",
};

static int vel_stats_show(void *data, struct seq_file *m)
{
	struct request_queue *q = data;
	struct vel_data *vd = q->elevator->elevator_data;
	struct vel_stats s;
	unsigned int held;
	int i;

	spin_lock(&vd->lock);
	s = vd->stats;
	held = vd->nr_held;
	spin_unlock(&vd->lock);

	seq_printf(m, "read queued %llu dispatched %llu merged %llu expired %llu\n",
		   s.queued[VEL_READ], s.dispatched[VEL_READ],
		   s.merged[VEL_READ], s.expired[VEL_READ]);
	seq_printf(m, "write queued %llu dispatched %llu merged %llu expired %llu\n",
		   s.queued[VEL_WRITE], s.dispatched[VEL_WRITE],
		   s.merged[VEL_WRITE], s.expired[VEL_WRITE]);
	seq_printf(m, "bundles opened %llu", s.bundles_opened);
	for (i = 0; i < VEL_CLOSE_NR; i++)
		seq_printf(m, " closed_%s %llu", vel_close_names[i],
			   s.bundles_closed[i]);
	seq_printf(m, " bundled_writes %llu held %u\n", s.bundled_writes, held);
	seq_printf(m, "starved %llu\n", s.starved);
	seq_printf(m, "deferred %llu\n", s.deferred);
	return 0;
}

static const struct blk_mq_debugfs_attr vel_queue_debugfs_attrs[] = {
	{"stats", 0400, vel_stats_show},
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
	return elv_register(&veloces);
}

static void __exit veloces_exit(void)
{
	elv_unregister(&veloces);
}

module_init(veloces_init);
module_exit(veloces_exit);

MODULE_AUTHOR("The Veloces authors");
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Veloces: flash-aware I/O scheduler with erase-block write bundling");
