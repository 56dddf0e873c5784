"""The user's fleet: the GPU inventory (types, counts, prices), its servers and the
data-centre network they sit on, validated."""
