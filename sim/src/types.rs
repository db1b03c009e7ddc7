//! Core value types shared by every stage: time, operations, bios and requests.

/// Simulated time in integer nanoseconds.
pub type Ns = u64;

pub const US: Ns = 1_000;
pub const MS: Ns = 1_000_000;
pub const SEC: Ns = 1_000_000_000;

/// Bytes per sector: the block layer's unit, as in Linux.
pub const SECTOR: u64 = 512;

/// Data direction of a bio or request.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
}

impl Op {
    /// Index for per-direction arrays: read 0, write 1.
    pub fn idx(self) -> usize {
        match self {
            Op::Read => 0,
            Op::Write => 1,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
        }
    }
}

/// Index of a request in the [`ReqTable`].
pub type ReqId = u32;

/// What a bio carries besides its range (`bi_opf` flags, `bi_ioprio`,
/// `bi_blkg`, the submitting CPU); requests take their first bio's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BioAttrs {
    /// REQ_FUA: the data is on stable media when the request completes.
    pub fua: bool,
    /// REQ_PREFLUSH: the device's volatile cache is flushed before it.
    pub preflush: bool,
    /// Submitting CPU (blkparse's CPU column; a job's clone number).
    pub cpu: u16,
    /// I/O priority as Linux encodes it: class << 13 | level (0: none).
    pub ioprio: u16,
    /// cgroup (blkcg) id; 0 is the root.
    pub cgroup: u32,
}

/// I/O priority classes as Linux numbers them (`IOPRIO_CLASS_*`).
pub const IOPRIO_CLASS_RT: u16 = 1;
pub const IOPRIO_CLASS_BE: u16 = 2;
pub const IOPRIO_CLASS_IDLE: u16 = 3;

/// `IOPRIO_PRIO_VALUE(class, level)`: the ioprio a bio carries.
pub const fn ioprio_value(class: u16, level: u16) -> u16 {
    class << 13 | level
}

/// `IOPRIO_PRIO_CLASS(ioprio)`.
pub const fn ioprio_class(ioprio: u16) -> u16 {
    ioprio >> 13
}

/// One I/O as submitted by a workload (Linux's `struct bio`).
#[derive(Clone, Copy, Debug)]
pub struct BioSpec {
    pub op: Op,
    /// Synchronous write (REQ_SYNC / O_SYNC / O_DIRECT writes); reads are always sync.
    pub sync: bool,
    pub sector: u64,
    pub sectors: u32,
    /// Submitting process (blkparse PID, or job clone number).
    pub pid: u32,
    /// Index of the job (workload source) for per-job metrics.
    pub job: u32,
    /// Opaque tag the source gets back on completion.
    pub tag: u64,
    pub attrs: BioAttrs,
}

impl BioSpec {
    /// The kernel's `op_is_sync`: reads, sync writes, FUA and PREFLUSH. It picks
    /// a request's tag class (shallow depths limit the others) and, under the
    /// single-queue request lists, the list it counts on.
    pub fn is_sync(&self) -> bool {
        self.sync || self.op == Op::Read || self.attrs.fua || self.attrs.preflush
    }

    /// A bio of process 1, job 0, with the tag the source gets back: what
    /// scripted tests submit.
    pub fn scripted(op: Op, sync: bool, sector: u64, sectors: u32, tag: u64) -> BioSpec {
        BioSpec {
            op,
            sync,
            sector,
            sectors,
            pid: 1,
            job: 0,
            tag,
            attrs: Default::default(),
        }
    }
}

/// A bio inside the simulator, with the time it entered the block layer.
#[derive(Clone, Copy, Debug)]
pub struct Bio {
    pub spec: BioSpec,
    pub submitted: Ns,
    /// When the submitting task was done with it (fio's slat ends): it was
    /// merged or got a request. `Ns::MAX` while the task sleeps for a request.
    pub queued: Ns,
    /// Next bio merged into the same request (intrusive list), or `NONE`.
    pub next: u32,
    /// The bio this one was split from (an index into the table's split
    /// parents), or `NONE` for a whole bio.
    pub parent: u32,
}

/// A bio split at max_sectors (`bio_split`): the original, completed when its
/// last part completes (`bio_chain` / `bio_endio` of the parent).
#[derive(Clone, Copy, Debug)]
pub struct SplitParent {
    pub spec: BioSpec,
    pub submitted: Ns,
    /// When the submitting task was done with the last of its parts (the
    /// latest `queued` of the parts completed so far).
    pub queued: Ns,
    /// Parts not yet completed.
    pub remaining: u32,
}

/// A bio the source submitted, completed (whole, or with the last part of a
/// split): what the statistics record, once.
#[derive(Clone, Copy, Debug)]
pub struct Finished {
    pub spec: BioSpec,
    pub submitted: Ns,
    /// When the submitting task was done with it (fio's slat ends).
    pub queued: Ns,
}

pub const NONE: u32 = u32::MAX;

/// A request: one or more contiguous bios of the same direction.
#[derive(Clone, Debug)]
pub struct Request {
    pub op: Op,
    pub sync: bool,
    pub sector: u64,
    pub sectors: u32,
    pub pid: u32,
    /// The workload source (job, trace) its first bio came from: the flow a
    /// QoS scheduler shares the device between ([`crate::sched::FlowQos`]).
    pub job: u32,
    /// Earliest submission time of its bios.
    pub submitted: Ns,
    /// Time it was inserted into the scheduler.
    pub inserted: Ns,
    /// Time it was dispatched to the device.
    pub dispatched: Ns,
    /// Scheduler-private deadline or timestamp (like `rq->fifo_time`).
    pub fifo_time: Ns,
    /// Number of bios merged into this request (1 = none merged).
    pub nr_bios: u32,
    pub first_bio: u32,
    pub last_bio: u32,
    pub live: bool,
    /// The first bio's flags, priority, cgroup and CPU.
    pub attrs: BioAttrs,
    /// Its tag was taken under the scheduler's shallow depth (`limit_depth`).
    pub limited: bool,
    /// The device (engine lane) the request is queued for: 0 on a
    /// single-device run.
    pub lane: u8,
}

impl Request {
    /// A request outside any table (one bio, times zero): for driving a device
    /// model directly, in tests and validation.
    pub fn standalone(op: Op, sync: bool, sector: u64, sectors: u32) -> Request {
        Request {
            op,
            sync,
            sector,
            sectors,
            pid: 0,
            job: 0,
            submitted: 0,
            inserted: 0,
            dispatched: 0,
            fifo_time: 0,
            nr_bios: 1,
            first_bio: 0,
            last_bio: 0,
            live: true,
            attrs: BioAttrs::default(),
            limited: false,
            lane: 0,
        }
    }

    pub fn end(&self) -> u64 {
        self.sector + self.sectors as u64
    }

    /// [`BioSpec::is_sync`] of its first bio.
    pub fn is_sync(&self) -> bool {
        self.sync || self.attrs.fua || self.attrs.preflush
    }
    pub fn bytes(&self) -> u64 {
        self.sectors as u64 * SECTOR
    }
}

/// Slab of requests and bios, indexed by small integers; memory stays bounded by
/// what is in flight because freed slots are reused.
#[derive(Default)]
pub struct ReqTable {
    reqs: Vec<Request>,
    free_reqs: Vec<ReqId>,
    bios: Vec<Bio>,
    free_bios: Vec<u32>,
    parents: Vec<SplitParent>,
    free_parents: Vec<u32>,
    live: usize,
    live_limited: usize,
    /// Live, shallow-depth limited and sync ([`BioSpec::is_sync`]) requests
    /// per lane, where a run has more than one device (each lane's
    /// nr_requests is its own).
    live_on: Vec<[usize; 3]>,
}

impl ReqTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of requests allocated and not yet freed.
    pub fn live(&self) -> usize {
        self.live
    }

    pub fn alloc_bio(&mut self, spec: BioSpec, now: Ns) -> u32 {
        let bio = Bio {
            spec,
            submitted: now,
            queued: now,
            next: NONE,
            parent: NONE,
        };
        if let Some(i) = self.free_bios.pop() {
            self.bios[i as usize] = bio;
            i
        } else {
            self.bios.push(bio);
            (self.bios.len() - 1) as u32
        }
    }

    pub fn bio(&self, id: u32) -> &Bio {
        &self.bios[id as usize]
    }

    pub fn bio_mut(&mut self, id: u32) -> &mut Bio {
        &mut self.bios[id as usize]
    }

    pub fn free_bio(&mut self, id: u32) {
        self.free_bios.push(id);
    }

    /// Split bio `id` into parts of at most `max_sectors` sectors, in sector
    /// order (`bio_split_to_limits`: the block layer splits a bio larger than
    /// max_sectors_kb before it becomes a request). The parts are new bios
    /// pushed on `parts`; `id` itself is freed and lives on as their parent.
    /// A bio that fits is left alone (pushed as it is).
    pub fn split_bio(&mut self, id: u32, max_sectors: u32, parts: &mut Vec<u32>) {
        let b = self.bios[id as usize];
        let max = max_sectors.max(1);
        if b.spec.sectors <= max || b.parent != NONE {
            parts.push(id);
            return;
        }
        let lens: Vec<u32> = (0..b.spec.sectors.div_ceil(max))
            .map(|i| max.min(b.spec.sectors - i * max))
            .collect();
        self.split_into(id, &lens, parts);
    }

    /// A completed bio (already off its request): the bio the source
    /// submitted, when this completes it (a whole bio, or the last part of a
    /// split one, with the latest slat end of its parts); `None` while parts
    /// remain.
    pub fn finish_bio(&mut self, bio: &Bio) -> Option<Finished> {
        if bio.parent == NONE {
            return Some(Finished {
                spec: bio.spec,
                submitted: bio.submitted,
                queued: bio.queued,
            });
        }
        let p = &mut self.parents[bio.parent as usize];
        p.queued = p.queued.max(bio.queued);
        p.remaining -= 1;
        if p.remaining > 0 {
            return None;
        }
        let out = Finished {
            spec: p.spec,
            submitted: p.submitted,
            queued: p.queued,
        };
        self.free_parents.push(bio.parent);
        Some(out)
    }

    /// Turn a bio into a new request.
    /// Requests live on lane `lane` (allocated, not yet freed).
    pub fn live_on(&self, lane: u8) -> usize {
        self.live_on.get(lane as usize).map_or(0, |c| c[0])
    }

    /// Requests live on lane `lane` that took a shallow-depth tag.
    pub fn live_limited_on(&self, lane: u8) -> usize {
        self.live_on.get(lane as usize).map_or(0, |c| c[1])
    }

    /// Requests live on lane `lane` of one class: sync ([`BioSpec::is_sync`])
    /// or not.
    pub fn live_class_on(&self, lane: u8, sync: bool) -> usize {
        let c = self.live_on.get(lane as usize).copied().unwrap_or([0; 3]);
        if sync {
            c[2]
        } else {
            c[0] - c[2]
        }
    }

    fn count(&mut self, lane: u8, which: usize, up: bool) {
        let l = lane as usize;
        if self.live_on.len() <= l {
            self.live_on.resize(l + 1, [0; 3]);
        }
        if up {
            self.live_on[l][which] += 1;
        } else {
            self.live_on[l][which] -= 1;
        }
    }

    /// Split bio `id` into consecutive parts of `lens` sectors (which sum to
    /// its size), each a bio of its own completing the original with its
    /// last part, as [`ReqTable::split_bio`] does at max_sectors: a placement
    /// stage uses it when a bio's sectors live on two devices. One part (or a
    /// bio that already is a part) leaves it whole.
    pub fn split_into(&mut self, id: u32, lens: &[u32], parts: &mut Vec<u32>) {
        let b = self.bios[id as usize];
        if lens.len() <= 1 || b.parent != NONE {
            parts.push(id);
            return;
        }
        debug_assert_eq!(lens.iter().sum::<u32>(), b.spec.sectors);
        let parent = SplitParent {
            spec: b.spec,
            submitted: b.submitted,
            queued: b.submitted,
            remaining: lens.len() as u32,
        };
        let pid = if let Some(i) = self.free_parents.pop() {
            self.parents[i as usize] = parent;
            i
        } else {
            self.parents.push(parent);
            (self.parents.len() - 1) as u32
        };
        self.free_bio(id);
        let mut done = 0u64;
        for &len in lens {
            let spec = BioSpec {
                sector: b.spec.sector + done,
                sectors: len,
                ..b.spec
            };
            let part = self.alloc_bio(spec, b.submitted);
            self.bios[part as usize].parent = pid;
            parts.push(part);
            done += len as u64;
        }
    }

    pub fn alloc_req(&mut self, bio_id: u32, now: Ns) -> ReqId {
        self.alloc_req_on(bio_id, now, 0)
    }

    /// [`ReqTable::alloc_req`] on device lane `lane`.
    pub fn alloc_req_on(&mut self, bio_id: u32, now: Ns, lane: u8) -> ReqId {
        let b = self.bios[bio_id as usize];
        if b.queued == Ns::MAX {
            // The task that slept for this request wakes up with it.
            self.bios[bio_id as usize].queued = now;
        }
        let rq = Request {
            op: b.spec.op,
            sync: b.spec.sync || b.spec.op == Op::Read,
            sector: b.spec.sector,
            sectors: b.spec.sectors,
            pid: b.spec.pid,
            job: b.spec.job,
            submitted: b.submitted,
            inserted: now,
            dispatched: 0,
            fifo_time: 0,
            nr_bios: 1,
            first_bio: bio_id,
            last_bio: bio_id,
            live: true,
            attrs: b.spec.attrs,
            limited: false,
            lane,
        };
        self.live += 1;
        self.count(lane, 0, true);
        if rq.is_sync() {
            self.count(lane, 2, true);
        }
        if let Some(i) = self.free_reqs.pop() {
            self.reqs[i as usize] = rq;
            i
        } else {
            self.reqs.push(rq);
            (self.reqs.len() - 1) as ReqId
        }
    }

    /// Count `id` as holding a tag under the scheduler's shallow depth.
    pub fn set_limited(&mut self, id: ReqId) {
        self.reqs[id as usize].limited = true;
        self.live_limited += 1;
        let lane = self.reqs[id as usize].lane;
        self.count(lane, 1, true);
    }

    /// Live requests that took their tag under the shallow depth.
    pub fn live_limited(&self) -> usize {
        self.live_limited
    }

    pub fn free_req(&mut self, id: ReqId) {
        let lane = self.reqs[id as usize].lane;
        if std::mem::take(&mut self.reqs[id as usize].limited) {
            self.live_limited -= 1;
            self.count(lane, 1, false);
        }
        self.reqs[id as usize].live = false;
        self.free_reqs.push(id);
        self.live -= 1;
        self.count(lane, 0, false);
        if self.reqs[id as usize].is_sync() {
            self.count(lane, 2, false);
        }
    }

    pub fn get(&self, id: ReqId) -> &Request {
        &self.reqs[id as usize]
    }

    pub fn get_mut(&mut self, id: ReqId) -> &mut Request {
        &mut self.reqs[id as usize]
    }

    /// Append a bio at the end of a request (back merge).
    pub fn back_merge_bio(&mut self, rq: ReqId, bio_id: u32) {
        let (sectors, submitted) = {
            let b = &self.bios[bio_id as usize];
            (b.spec.sectors, b.submitted)
        };
        let last = self.reqs[rq as usize].last_bio;
        self.bios[last as usize].next = bio_id;
        let r = &mut self.reqs[rq as usize];
        r.last_bio = bio_id;
        r.sectors += sectors;
        r.nr_bios += 1;
        r.submitted = r.submitted.min(submitted);
    }

    /// Prepend a bio at the start of a request (front merge).
    pub fn front_merge_bio(&mut self, rq: ReqId, bio_id: u32) {
        let first = self.reqs[rq as usize].first_bio;
        let b = &mut self.bios[bio_id as usize];
        b.next = first;
        let (sector, sectors, submitted) = (b.spec.sector, b.spec.sectors, b.submitted);
        let r = &mut self.reqs[rq as usize];
        r.first_bio = bio_id;
        r.sector = sector;
        r.sectors += sectors;
        r.nr_bios += 1;
        r.submitted = r.submitted.min(submitted);
    }

    /// Merge request `next` (which must start where `rq` ends) into `rq`; `next` is freed.
    /// The merged request keeps the earlier fifo_time, as Linux does.
    pub fn merge_requests(&mut self, rq: ReqId, next: ReqId) {
        let n = self.reqs[next as usize].clone();
        let last = self.reqs[rq as usize].last_bio;
        self.bios[last as usize].next = n.first_bio;
        let r = &mut self.reqs[rq as usize];
        r.last_bio = n.last_bio;
        r.sectors += n.sectors;
        r.nr_bios += n.nr_bios;
        r.submitted = r.submitted.min(n.submitted);
        r.fifo_time = r.fifo_time.min(n.fifo_time);
        r.sync |= n.sync;
        self.free_req(next);
    }

    /// The bios of a request, in sector order.
    pub fn bios_of(&self, rq: ReqId) -> BioIter<'_> {
        BioIter {
            table: self,
            cur: self.reqs[rq as usize].first_bio,
        }
    }
}

pub struct BioIter<'a> {
    table: &'a ReqTable,
    cur: u32,
}

impl Iterator for BioIter<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.cur == NONE {
            return None;
        }
        let id = self.cur;
        self.cur = self.table.bios[id as usize].next;
        Some(id)
    }
}

/// What a device tells the block layer and its scheduler about itself (its
/// queue/ attributes in sysfs): devices report it, schedulers and stages read it.
#[derive(Clone, Copy, Debug)]
pub struct DeviceInfo {
    pub capacity_sectors: u64,
    pub queue_depth: u32,
    pub rotational: bool,
    /// Erase block (or preferred erase size) in sectors, where the device reports one.
    pub erase_block_sectors: Option<u32>,
    /// Optimal I/O size in sectors, where the device reports one.
    pub optimal_io_sectors: Option<u32>,
    /// Largest request the device accepts (queue/max_hw_sectors_kb * 2), where
    /// it is below the block layer's default max_sectors_kb (1280 KiB).
    pub max_hw_sectors: Option<u32>,
    /// Tags the host's driver gives the block layer where they exceed
    /// `queue_depth`: Linux's mmc driver gives an SD card without a command
    /// queue 64 (MMC_QUEUE_DEPTH) and sends it one command at a time, so
    /// under an elevator nr_requests is 2 x min(64, 128) = 128, not 2.
    pub host_tags: Option<u32>,
}

impl DeviceInfo {
    /// `nr_requests` as the kernel sets it for a device of `depth` tags
    /// (blk_mq_init_sched): under an elevator 2 x min(tags, BLKDEV_DEFAULT_RQ
    /// 128), the tags being the host's where they exceed the device's depth
    /// ([`DeviceInfo::host_tags`]); without one the device's depth.
    pub fn default_nr_requests(&self, depth: u32, elevator: bool) -> u32 {
        if elevator {
            2 * self.host_tags.unwrap_or(depth).max(depth).min(128)
        } else {
            depth
        }
    }

    /// A non-rotational device of `capacity_sectors` with `queue_depth` tags that
    /// reports no erase block, optimal I/O size or request-size limit.
    pub fn flash(capacity_sectors: u64, queue_depth: u32) -> Self {
        DeviceInfo {
            capacity_sectors,
            queue_depth,
            rotational: false,
            erase_block_sectors: None,
            optimal_io_sectors: None,
            max_hw_sectors: None,
            host_tags: None,
        }
    }
}

/// Start loading `r` into the cache (a hint for a random access into a
/// table far larger than the cache, made before the value is needed).
#[inline]
pub fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint: it reads nothing into the program
        // and never faults; `r` is a valid reference, and SSE is part of
        // the x86_64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((r as *const T).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}
