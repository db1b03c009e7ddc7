"""Booting kernels: the kernel table, the debug kernel, QEMU through virtme-ng, and the guest
side (the typed request and the agent that carries it out).
"""
