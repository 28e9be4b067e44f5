"""The watched kinds, one module each (the four storage kinds, handled alike, share
storage.py): what an object of the kind changes in the World when it comes, changes or goes,
declared with where it is served (base.Handler); cache/wiring.py lists them."""
