"""Ring 0, the base every other ring stands on: source files and spans (`source`) and every
diagnostic class with its stable code (`diagnostics`).

May import: nothing of refinterp outside `refinterp.core`."""
