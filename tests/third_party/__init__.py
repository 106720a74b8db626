"""Code copied from other projects, each file with its origin and license; not our code to refactor."""
