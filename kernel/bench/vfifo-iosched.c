// SPDX-License-Identifier: GPL-2.0
/*
 * vfifo: the cheapest blk-mq elevator, built only to measure the elevator
 * framework's own cost (docs/notebooks/benchmarks.md). Never installed or shipped.
 *
 * One FIFO per hardware queue under its own lock: no merging, no sorting, no
 * depth limits. What any elevator pays above "none" (scheduler tags, the
 * insert and dispatch calls, a lock per request) and nothing more.
 */
#include <linux/kernel.h>
#include <linux/blkdev.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#include "elevator.h"
#include "blk.h"
#include "blk-mq.h"
#include "blk-mq-sched.h"

struct vfifo_hctx {
	spinlock_t lock;	/* protects list */
	struct list_head list;
};

static int vfifo_init_sched(struct request_queue *q, struct elevator_type *e)
{
	struct elevator_queue *eq = elevator_alloc(q, e);

	if (!eq)
		return -ENOMEM;
	q->elevator = eq;
	return 0;
}

static void vfifo_exit_sched(struct elevator_queue *e)
{
}

static int vfifo_init_hctx(struct blk_mq_hw_ctx *hctx, unsigned int idx)
{
	struct vfifo_hctx *h;

	h = kmalloc_node(sizeof(*h), GFP_KERNEL, hctx->numa_node);
	if (!h)
		return -ENOMEM;
	spin_lock_init(&h->lock);
	INIT_LIST_HEAD(&h->list);
	hctx->sched_data = h;
	return 0;
}

static void vfifo_exit_hctx(struct blk_mq_hw_ctx *hctx, unsigned int idx)
{
	struct vfifo_hctx *h = hctx->sched_data;

	WARN_ON_ONCE(!list_empty(&h->list));
	kfree(h);
	hctx->sched_data = NULL;
}

static void __vfifo_insert(struct blk_mq_hw_ctx *hctx, struct list_head *list,
			   bool at_head)
{
	struct vfifo_hctx *h = hctx->sched_data;

	spin_lock(&h->lock);
	if (at_head)
		list_splice_init(list, &h->list);
	else
		list_splice_tail_init(list, &h->list);
	spin_unlock(&h->lock);
}

#ifdef BLK_MQ_INSERT_AT_HEAD
static void vfifo_insert_requests(struct blk_mq_hw_ctx *hctx,
				  struct list_head *list, blk_insert_t flags)
{
	__vfifo_insert(hctx, list, !!(flags & BLK_MQ_INSERT_AT_HEAD));
}
#else
static void vfifo_insert_requests(struct blk_mq_hw_ctx *hctx,
				  struct list_head *list, bool at_head)
{
	__vfifo_insert(hctx, list, at_head);
}
#endif

static struct request *vfifo_dispatch_request(struct blk_mq_hw_ctx *hctx)
{
	struct vfifo_hctx *h = hctx->sched_data;
	struct request *rq;

	spin_lock(&h->lock);
	rq = list_first_entry_or_null(&h->list, struct request, queuelist);
	if (rq) {
		list_del_init(&rq->queuelist);
		rq->rq_flags |= RQF_STARTED;
	}
	spin_unlock(&h->lock);
	return rq;
}

static bool vfifo_has_work(struct blk_mq_hw_ctx *hctx)
{
	struct vfifo_hctx *h = hctx->sched_data;

	return !list_empty_careful(&h->list);
}

static struct elevator_type vfifo = {
	.ops = {
		.init_sched		= vfifo_init_sched,
		.exit_sched		= vfifo_exit_sched,
		.init_hctx		= vfifo_init_hctx,
		.exit_hctx		= vfifo_exit_hctx,
		.insert_requests	= vfifo_insert_requests,
		.dispatch_request	= vfifo_dispatch_request,
		.has_work		= vfifo_has_work,
	},
	.elevator_name = "vfifo",
	.elevator_owner = THIS_MODULE,
};

static int __init vfifo_init(void)
{
	return elv_register(&vfifo);
}

static void __exit vfifo_exit(void)
{
	elv_unregister(&vfifo);
}

module_init(vfifo_init);
module_exit(vfifo_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vfifo: minimal FIFO elevator, the framework's cost floor (benchmark only)");
