"""Block devices in the guest: the device spec language and emulated drivers, vsim's models
served over NBD, and the served devices' suite.
"""
