"""Outbound network access: what may be fetched (ssrf.py) and the one client allowed to fetch it (fetch.py).

Nothing is re-exported here on purpose: importing the address rules must not pull in aiohttp.
"""
