// The consumer loop's compile-time switches of gemm/10_wgmma_tma.cu and conv/14_tc_wgmma_tma.cu (made for fp8's
// loop: docs/perf-notes.md, "The last 0.7%" and "The last 0.4%"), their defaults (off) and their checks:
//  UWG   1: the warpgroup index broadcast from lane 0 (hopper.cuh's warpgroup_of), so the wgmma descriptors live in
//           uniform registers (no R2UR move before each wgmma)
//  CARRY 1: the ring's slot, phase and descriptors carried from slot to slot (hopper.cuh's RingCursor) rather than
//           derived from the slot count after the full barrier's answer
//  PEEK  1 (with CARRY): the next slot's full barrier asked about (mbar_test) while this slot's wgmmas run, its
//           wait skipped where the data had come
#pragma once

#ifndef UWG
#define UWG 0
#endif
#ifndef CARRY
#define CARRY 0
#endif
#ifndef PEEK
#define PEEK 0
#endif

static_assert(UWG == 0 || UWG == 1, "UWG: 0 or 1");
static_assert(CARRY == 0 || CARRY == 1, "CARRY: 0 or 1");
static_assert(PEEK == 0 || (PEEK == 1 && CARRY == 1), "PEEK: 0, or 1 with CARRY");
