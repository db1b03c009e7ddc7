#include <linux/module.h>
#define INCLUDE_VERMAGIC
#include <linux/build-salt.h>
#include <linux/elfnote-lto.h>
#include <linux/export-internal.h>
#include <linux/vermagic.h>
#include <linux/compiler.h>

BUILD_SALT;
BUILD_LTO_INFO;

MODULE_INFO(vermagic, VERMAGIC_STRING);
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

#ifdef CONFIG_RETPOLINE
MODULE_INFO(retpoline, "Y");
#endif


static const struct modversion_info ____versions[]
__used __section("__versions") = {
	{ 0x85bfc5f9, "__SCT__tp_func_block_rq_insert" },
	{ 0x384659d1, "elv_rb_add" },
	{ 0x7f02188f, "__msecs_to_jiffies" },
	{ 0x180303e0, "blk_mq_sched_try_merge" },
	{ 0xb7bf3dbb, "wbt_disable_default" },
	{ 0xca9360b5, "rb_next" },
	{ 0x9e5b1aff, "sbitmap_queue_min_shallow_depth" },
	{ 0xea82d349, "hrtimer_init" },
	{ 0x463c3e3b, "sbitmap_init_node" },
	{ 0x37a0cba, "kfree" },
	{ 0xba8fbd64, "_raw_spin_lock" },
	{ 0xbdfb6dbb, "__fentry__" },
	{ 0xe783e261, "sysfs_emit" },
	{ 0x7f24de73, "jiffies_to_usecs" },
	{ 0xa19b956, "__stack_chk_fail" },
	{ 0xf82ec573, "rb_prev" },
	{ 0x47f0fb83, "blk_queue_flag_set" },
	{ 0x92fd0370, "kmalloc_node_trace" },
	{ 0x1055eb11, "elv_bio_merge_ok" },
	{ 0xa1997e3f, "blk_mq_free_request" },
	{ 0x60d842d1, "elv_register" },
	{ 0xc01e163a, "__SCK__tp_func_block_rq_insert" },
	{ 0x68f31cbd, "__list_add_valid" },
	{ 0x8c8569cb, "kstrtoint" },
	{ 0x94d070aa, "__tracepoint_block_rq_insert" },
	{ 0x2f4f5a17, "elv_rqhash_add" },
	{ 0x4f61787b, "elv_unregister" },
	{ 0x5a5a2271, "__cpu_online_mask" },
	{ 0xe1537255, "__list_del_entry_valid" },
	{ 0x89474193, "elevator_alloc" },
	{ 0x2b6ab461, "blk_mq_sched_try_insert_merge" },
	{ 0xc0b7c197, "hrtimer_start_range_ns" },
	{ 0xdeb003fb, "elv_rb_find" },
	{ 0x5b8239ca, "__x86_return_thunk" },
	{ 0x2a4d444b, "elv_rb_del" },
	{ 0xc9ec4e21, "free_percpu" },
	{ 0x15ba50a6, "jiffies" },
	{ 0xc361cc1e, "elv_rqhash_del" },
	{ 0x7a2af7b4, "cpu_number" },
	{ 0x4629334c, "__preempt_count" },
	{ 0xe7a1faf1, "sbitmap_get_shallow" },
	{ 0xb43f9365, "ktime_get" },
	{ 0x2e163f4d, "wbt_enable_default" },
	{ 0xf0949581, "seq_printf" },
	{ 0x102fe6de, "hrtimer_cancel" },
	{ 0x233622c7, "sbitmap_weight" },
	{ 0xeb8cec5f, "blk_mq_sched_mark_restart_hctx" },
	{ 0x7aa1756e, "kvfree" },
	{ 0x6129bd5a, "blk_mq_run_hw_queues" },
	{ 0x688e72e1, "__SCT__preempt_schedule_notrace" },
	{ 0xb5b54b34, "_raw_spin_unlock" },
	{ 0x7a7caba8, "kmalloc_caches" },
	{ 0x176238f7, "kobject_put" },
	{ 0x9060323f, "module_layout" },
};

MODULE_INFO(depends, "");

