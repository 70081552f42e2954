"""The deployable stream processors built on the goaicore package."""
