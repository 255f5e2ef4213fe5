"""The interchange layout's containers."""
