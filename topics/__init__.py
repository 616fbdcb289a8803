"""Topic declarations and the pydantic wire schemas carried on them."""
