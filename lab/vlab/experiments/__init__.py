"""Experiments on the schedulers: the comparison plan and its statistics, the write-flood
family, and served-device fidelity.
"""
