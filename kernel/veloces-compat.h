/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What differs between the kernels veloces builds for (6.1 and 6.12), in one
 * place: each difference is found by a feature probe (a macro or a type the
 * newer interface brings), never by a version number. Included by
 * veloces-iosched.c after the block layer's private headers.
 */
#ifndef VELOCES_COMPAT_H
#define VELOCES_COMPAT_H

/*
 * The flag that says the scheduler prepared a request, and will see its
 * finish_request: RQF_ELVPRIV until 6.4, RQF_USE_SCHED after.
 */
#ifdef RQF_USE_SCHED
#define VEL_RQF_SCHED	RQF_USE_SCHED
#else
#define VEL_RQF_SCHED	RQF_ELVPRIV
#endif

/*
 * insert_requests() takes flags from 6.5 (BLK_MQ_INSERT_AT_HEAD), a bool
 * at_head before: vel_insert_t names the type of that argument.
 */
#ifdef BLK_MQ_INSERT_AT_HEAD
#define vel_insert_t	blk_insert_t

static inline bool vel_insert_at_head(vel_insert_t flags)
{
	return flags & BLK_MQ_INSERT_AT_HEAD;
}
#else
#define vel_insert_t	bool

static inline bool vel_insert_at_head(vel_insert_t at_head)
{
	return at_head;
}
#endif

/*
 * Writeback throttling counts held writes as in flight: veloces turns it off
 * while it runs, as BFQ does. wbt_{enable,disable}_default() took the
 * request_queue and later the gendisk (the argument is chosen by the
 * function's type, at compile time); 6.5 and later also want the elevator's
 * ELEVATOR_FLAG_DISABLE_WBT, which tells blk-wbt not to turn it back on.
 */
static inline void *vel_wbt_arg(struct request_queue *q)
{
	if (__builtin_types_compatible_p(typeof(wbt_disable_default),
					 void (struct gendisk *)))
		return q->disk;
	return q;
}

static inline void vel_wbt_disable(struct elevator_queue *eq,
				   struct request_queue *q)
{
#ifdef ELEVATOR_FLAG_DISABLE_WBT
	set_bit(ELEVATOR_FLAG_DISABLE_WBT, &eq->flags);
#endif
	wbt_disable_default(vel_wbt_arg(q));
}

static inline void vel_wbt_enable(struct elevator_queue *eq,
				  struct request_queue *q)
{
#ifdef ELEVATOR_FLAG_DISABLE_WBT
	clear_bit(ELEVATOR_FLAG_DISABLE_WBT, &eq->flags);
#endif
	wbt_enable_default(vel_wbt_arg(q));
}

#endif /* VELOCES_COMPAT_H */
