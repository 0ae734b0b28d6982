"""Ring 0, the base every other ring stands on: source files and spans (`source`), every
diagnostic class with its stable code (`diagnostics`), bounded in-memory caches and the disk
cache of parsed modules (`cache`), and every read or write of a file on disk (`files`).

May import: nothing of refinterp outside `refinterp.core`."""
