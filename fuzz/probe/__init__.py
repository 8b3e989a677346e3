"""Everything that touches inductor or dynamo internals: the selection observer, config patches, compile
speed-ups, the template catalogue, failure descriptions."""
