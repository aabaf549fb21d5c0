// Hopper (sm_90a) synchronisation for async pipelines, part of hopper.cuh (include that): mbarriers and the rings
// of slots built on them, arrivals across a cluster, release/acquire flags, and clusters themselves.
#pragma once
#include <cstdint>

// ---- mbarriers (PTX ISA "mbarrier"): a phase completes when its arrivals are in and its byte count is met ----

__device__ __forceinline__ void mbar_init(uint32_t bar, int arrivals)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals) : "memory");
}

// Arrive and announce `bytes` of TMA data that will complete this phase (the producer's half of the deal).
__device__ __forceinline__ void mbar_expect_bytes(uint32_t bar, int bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

// Arrive on a barrier of this block (release semantics at CTA scope).
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Arrive `count` times at once (the releases of several warps, made by one thread after a wait they share).
__device__ __forceinline__ void mbar_arrive_n(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

// Block until the phase of parity `parity` has completed. A fresh barrier counts its (imaginary) previous phase,
// parity 1, as complete: a producer waiting on "slot free" with parity 1 passes the first time round.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {  // try_wait itself suspends the thread for a while before it answers "not yet"
        asm volatile(
            "{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}

// Whether the phase of parity `parity` has completed, without waiting (acquire semantics where it has, as a
// wait's): a consumer asks about its next slot before it waits for its own wgmmas, as cuBLASLt's loop does.
__device__ __forceinline__ bool mbar_test(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done;
}

// The same wait with a suspend-time hint (10 ms, as CUTLASS's barriers give): the thread sleeps until the phase
// completes (or the hint runs out) instead of asking again, so waiting warps issue fewer instructions.
__device__ __forceinline__ void mbar_sleep(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile(
            "{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n"
            "selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar), "r"(parity), "r"(10000000) : "memory");
    } while (!done);
}

// A place in an mbarrier ring of RING_SLOTS slots, carried from one slot to the next (gemm/10's and conv/14's
// CARRY): the slot and the parity of its phase, a compare and two selects a slot where `it % RING_SLOTS` and
// `(it / RING_SLOTS) & 1` would be computed from a count (a multiply-high where RING_SLOTS is not a power of two).
template <int RING_SLOTS>
struct RingSlot {
    int slot = 0;
    uint32_t phase = 0;
    // On to the next slot; true where the ring wrapped to slot 0 (a new phase).
    __device__ __forceinline__ bool advance()
    {
        const bool wrap = slot == RING_SLOTS - 1;
        slot = wrap ? 0 : slot + 1;
        phase ^= wrap;
        return wrap;
    }
    // Straight to the it-th slot of the ring's life (a consumer that skips the slots of others' tiles).
    __device__ __forceinline__ void seek(uint32_t it)
    {
        slot = it % RING_SLOTS;
        phase = (it / RING_SLOTS) & 1;
    }
};

// The same with the wgmma descriptors of the slot's operands at their first k step, which move A_STEP and B_STEP
// (16-byte units: the bytes from one slot to the next) a slot and go back to slot 0's at the wrap: a consumer's
// descriptors, sums ready before the full barrier answers, where rebuilding them from the slot's address would come
// between that answer and the first wgmma.
template <int RING_SLOTS, uint32_t A_STEP, uint32_t B_STEP>
struct RingCursor : RingSlot<RING_SLOTS> {
    uint64_t first_a, first_b;  // slot 0's
    uint64_t desc_a, desc_b;
    __device__ __forceinline__ RingCursor(uint64_t a, uint64_t b) : first_a(a), first_b(b), desc_a(a), desc_b(b) {}
    __device__ __forceinline__ void advance()
    {
        const bool wrap = RingSlot<RING_SLOTS>::advance();
        desc_a = wrap ? first_a : desc_a + A_STEP;
        desc_b = wrap ? first_b : desc_b + B_STEP;
    }
    __device__ __forceinline__ void seek(uint32_t it)
    {
        RingSlot<RING_SLOTS>::seek(it);
        desc_a = first_a + this->slot * A_STEP;
        desc_b = first_b + this->slot * B_STEP;
    }
};

// Arrive on the barrier at the same shared-memory offset in cluster block `rank` (this block included). Release
// semantics at CTA scope, the default, as for a local arrive: the arrive only says "done reading this slot", and
// the reads (wgmmas) have completed before it. (.release.cluster, which orders this thread's memory operations
// cluster-wide first, made 2-block clusters slower than single blocks: docs/perf-notes.md.)
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank)
{
    asm volatile(
        "{\n.reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" ::"r"(bar), "r"(rank) : "memory");
}

// The same arrive with release semantics at cluster scope: what gemm/09_tf32_tma.cu used to do, kept so that its
// PROBE = 5 can measure the cost.
__device__ __forceinline__ void mbar_arrive_cluster_release(uint32_t bar, uint32_t rank)
{
    asm volatile(
        "{\n.reg .b32 remote;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}" ::"r"(bar), "r"(rank) : "memory");
}

// One arrive on the barrier at this offset in each of the cluster's CLUSTER_BLOCKS blocks (1, 2 or 4; this block
// included): a consumer warpgroup's "done with this slot" to every producer that multicasts into it. Written out,
// not looped (a loop here made ptxas serialise gemm/09's wgmmas).
template <int CLUSTER_BLOCKS>
__device__ __forceinline__ void mbar_arrive_each_block(uint32_t bar)
{
    static_assert(CLUSTER_BLOCKS == 1 || CLUSTER_BLOCKS == 2 || CLUSTER_BLOCKS == 4, "clusters of 1, 2 or 4 blocks");
    if (CLUSTER_BLOCKS == 1) {
        mbar_arrive(bar);
    } else {
        mbar_arrive_cluster(bar, 0);
        mbar_arrive_cluster(bar, 1);
        if (CLUSTER_BLOCKS == 4) {
            mbar_arrive_cluster(bar, 2);
            mbar_arrive_cluster(bar, 3);
        }
    }
}

// A flag in global memory between blocks of one grid: the writer's earlier stores (each thread's, fenced, then
// gathered by a barrier) are visible to whoever acquires the value it releases (conv/14_tc_wgmma_tma.cu's SPLIT).
__device__ __forceinline__ void flag_release(uint32_t* flag, uint32_t value)
{
    asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}
__device__ __forceinline__ uint32_t flag_acquire(const uint32_t* flag)
{
    uint32_t v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    return v;
}

// ---- clusters ---------------------------------------------------------------------------------------------

__device__ __forceinline__ uint32_t cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

// Every thread of every block in the cluster: barriers initialised here are visible there, and no block leaves
// while a neighbour may still write into its shared memory.
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// A ring's barriers at `bars`: RING_SLOTS "full" ones (the producer's one arrive, plus the bytes it announces), then
// RING_SLOTS "empty" ones (`releases` arrives: one per consumer warpgroup of the cluster). Thread 0 initialises them
// and makes them visible to the copy engine and the cluster's other blocks before any thread goes on.
template <int RING_SLOTS, int CLUSTER_BLOCKS>  // (not STAGES, CLUSTER: the kernels' -D macros)
__device__ __forceinline__ void ring_init(uint32_t bars, int releases)
{
    if (threadIdx.x == 0) {
        for (int s = 0; s < RING_SLOTS; ++s) {
            mbar_init(bars + 8 * s, 1);
            mbar_init(bars + 8 * (RING_SLOTS + s), releases);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (CLUSTER_BLOCKS > 1)
        cluster_sync();
    else
        __syncthreads();
}
