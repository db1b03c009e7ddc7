#include <linux/module.h>
#include <linux/export-internal.h>
#include <linux/compiler.h>

MODULE_INFO(name, KBUILD_MODNAME);

__visible struct module __this_module
__section(".gnu.linkonce.this_module") = {
	.name = KBUILD_MODNAME,
	.init = init_module,
#ifdef CONFIG_MODULE_UNLOAD
	.exit = cleanup_module,
#endif
	.arch = MODULE_ARCH_INIT,
};



static const struct modversion_info ____versions[]
__used __section("__versions") = {
	{ 0x15ba50a6, "jiffies" },
	{ 0x2e3fe987, "elv_rqhash_del" },
	{ 0xe7a1faf1, "sbitmap_get_shallow" },
	{ 0xb43f9365, "ktime_get" },
	{ 0xa467107b, "wbt_enable_default" },
	{ 0x8494a4b6, "seq_printf" },
	{ 0x102fe6de, "hrtimer_cancel" },
	{ 0x233622c7, "sbitmap_weight" },
	{ 0xd1f3c6d4, "blk_mq_sched_mark_restart_hctx" },
	{ 0x7aa1756e, "kvfree" },
	{ 0x70599258, "blk_mq_run_hw_queues" },
	{ 0x688e72e1, "__SCT__preempt_schedule_notrace" },
	{ 0xb5b54b34, "_raw_spin_unlock" },
	{ 0xf9218641, "kmalloc_caches" },
	{ 0x9acc1e61, "kobject_put" },
	{ 0x85bfc5f9, "__SCT__tp_func_block_rq_insert" },
	{ 0xa45ea6f0, "elv_rb_add" },
	{ 0x7696f8c7, "__list_add_valid_or_report" },
	{ 0x7f02188f, "__msecs_to_jiffies" },
	{ 0x651d5dfc, "blk_mq_sched_try_merge" },
	{ 0x3611a879, "wbt_disable_default" },
	{ 0xca9360b5, "rb_next" },
	{ 0x9e5b1aff, "sbitmap_queue_min_shallow_depth" },
	{ 0xea82d349, "hrtimer_init" },
	{ 0x463c3e3b, "sbitmap_init_node" },
	{ 0x37a0cba, "kfree" },
	{  0x53730, "pcpu_hot" },
	{ 0xba8fbd64, "_raw_spin_lock" },
	{ 0xbdfb6dbb, "__fentry__" },
	{ 0xe783e261, "sysfs_emit" },
	{ 0x7f24de73, "jiffies_to_usecs" },
	{ 0xf0fdf6cb, "__stack_chk_fail" },
	{ 0xf82ec573, "rb_prev" },
	{ 0x91fffaa0, "blk_queue_flag_set" },
	{ 0x46a47da2, "elv_bio_merge_ok" },
	{ 0x5d0e3482, "blk_mq_free_request" },
	{ 0x750203b3, "elv_register" },
	{ 0x19ec9f4b, "__SCK__tp_func_block_rq_insert" },
	{ 0x8c8569cb, "kstrtoint" },
	{ 0x9bf71cf, "__tracepoint_block_rq_insert" },
	{ 0x74bea3c5, "elv_rqhash_add" },
	{ 0x2fe4829e, "elv_unregister" },
	{ 0x950eb34e, "__list_del_entry_valid_or_report" },
	{ 0x5a5a2271, "__cpu_online_mask" },
	{ 0xeb1f8a4c, "elevator_alloc" },
	{ 0xa434f00, "blk_mq_sched_try_insert_merge" },
	{ 0xc0b7c197, "hrtimer_start_range_ns" },
	{ 0x2d8f571d, "__kmalloc_cache_node_noprof" },
	{ 0x129abf3d, "elv_rb_find" },
	{ 0x5b8239ca, "__x86_return_thunk" },
	{ 0x36150673, "elv_rb_del" },
	{ 0xc9ec4e21, "free_percpu" },
	{ 0x2f9b2b9a, "module_layout" },
};

MODULE_INFO(depends, "");

