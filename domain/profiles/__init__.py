"""Application profiles: named env, resources, node annotations and hooks that the jobs naming them are bound to."""

from domain.profiles.binding import bind_profiles
from domain.profiles.body import ProfileBody, name_problem, problems
from domain.profiles.profile import Profile, ProfileCatalog, catalog_id, profile_id

__all__ = ["Profile", "ProfileBody", "ProfileCatalog", "bind_profiles", "catalog_id", "name_problem", "problems",
           "profile_id"]
