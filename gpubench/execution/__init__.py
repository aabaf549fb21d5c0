"""Where tasks run: the worker process, the sweep's tasks, executors, the cluster, nvcc."""
