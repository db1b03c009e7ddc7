"""vlab: the Veloces lab. Boots Debian kernels under QEMU and runs block I/O experiments."""
