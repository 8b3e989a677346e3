"""The campaign engine: worker processes, the zygote, drivers, rounds, the coordinator."""
