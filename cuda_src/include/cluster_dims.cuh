// CLUSTER_DIMS: the kernel's cluster shape at compile time, __cluster_dims__(CLUSTER, 1, 1), where its blocks run in
// clusters of CLUSTER; nothing where CLUSTER is 1, so that build stays a plain kernel launched as before.
// Included after the kernel has set its CLUSTER (its -D value, or its default of 1).
#pragma once

#if CLUSTER > 1
#define CLUSTER_DIMS __cluster_dims__(CLUSTER, 1, 1)
#else
#define CLUSTER_DIMS
#endif
