"""Research data generators of the reproduction scripts (synthetic trees and chains of the
seeds' experiments). Not used by the library itself."""
