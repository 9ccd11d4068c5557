"""Collective ops across replicas and across the IPUs of one replica."""
__all__: list[str] = []
