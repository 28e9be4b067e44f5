"""One module per watched kind: what an object of it changes in the World when it comes,
changes or goes, declared with where it is served (base.Handler); cache/wiring.py lists them."""
