"""Checks of the veloces module in real kernels: the module suite (one file per check), the
conformance scenarios, and blktests.
"""
