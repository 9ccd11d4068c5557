"""How the replicas of one process run (inline, taking turns, in threads) and meet at collectives."""
