"""Devices, device buffers and the Arrays built from them."""
