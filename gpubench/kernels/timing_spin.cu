// A kernel that only waits, used by the timer when L2 is not flushed: queued before the start event, it keeps
// the GPU busy while the host enqueues the event and the launch being timed, so the measured interval holds
// the kernel alone and not the host's launch latency. (A flush of L2 gives the same cover when it runs.)

extern "C" __global__ void spin(long long nanoseconds)
{
    long long start;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    for (long long now = start; now - start < nanoseconds;) {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    }
}
