"""Safety: the SSRF decision and the guarded resolver that applies it to every connection."""
