"""The component kinds of this package, one module each (`arborist.component` says what a
kind defines). They are registered in `arborist.registry`."""
