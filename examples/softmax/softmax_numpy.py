"""A row softmax in NumPy, float32, writing its output in place like a kernel."""

import numpy as np


def softmax(x, y, rows, cols):
    z = x.astype(np.float32)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    y[...] = e / e.sum(axis=1, keepdims=True)
