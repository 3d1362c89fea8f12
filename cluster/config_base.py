"""The base of every config section, and the error that lists a stack's config problems."""

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    """Every section: immutable, camelCase keys as in the stack file, unknown keys rejected."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        hide_input_in_errors=True,
    )


class ConfigError(ValueError):
    """Invalid stack configuration; `problems` holds one message per bad key."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))

    def report(self, heading: str = "invalid stack configuration") -> str:
        """The problems under one heading, as the program prints them."""
        count = len(self.problems)
        return heading + (f" ({count} problems)" if count > 1 else "") + ":\n  " + "\n  ".join(self.problems)
