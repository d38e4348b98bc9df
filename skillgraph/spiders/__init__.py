"""Spiders: ``docs`` for any site, and one small declaration per documentation domain."""
