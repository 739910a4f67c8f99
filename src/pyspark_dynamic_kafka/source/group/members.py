"""The members of one query, one per cluster of its assignment: :class:`GroupMembers` (each a
:class:`~pyspark_dynamic_kafka.source.group.membership.GroupMember`), joined and left as the
metadata changes, and replaced when what their secret references name changes beyond the SASL
credentials a member takes anew."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from pyspark_dynamic_kafka.source.group.membership import GroupMember

__all__ = ["JOIN_TIMEOUT_S", "GroupMembers"]

_log = logging.getLogger(__name__)

#: Longest wait for a member's first assignment before planning without it.
JOIN_TIMEOUT_S = 60.0


class GroupMembers:
    """The members of one query: one :class:`GroupMember` per cluster of its assignment."""

    def __init__(self) -> None:
        self._members: dict[str, GroupMember] = {}

    def sync(self, assignment: Mapping[str, Any]) -> list[str]:
        """Join the group on clusters added to ``assignment`` (waiting for their first
        assignment), leave it on clusters removed or changed; returns the clusters left."""
        left = []
        for cluster_id, member in list(self._members.items()):
            cluster = assignment.get(cluster_id)
            if (
                cluster is None
                or member.properties != dict(cluster.properties)
                or member.topics != frozenset(cluster.topics)
                or not member.refresh_secrets()
            ):
                self.leave(cluster_id)
                left.append(cluster_id)
        joined = []
        for cluster_id, cluster in assignment.items():
            if cluster_id not in self._members:
                member = GroupMember(cluster_id, cluster.properties, cluster.topics)
                self._members[cluster_id] = member
                joined.append(member)
        for member in joined:
            if not member.wait_assigned(JOIN_TIMEOUT_S):
                _log.warning(
                    "Group %r on %r assigned nothing within %.0f s; planning without it.",
                    member.group,
                    member.cluster_id,
                    JOIN_TIMEOUT_S,
                )
        return left

    def leave(self, cluster_id: str) -> None:
        """Leave the group on ``cluster_id``."""
        self._members.pop(cluster_id).close()

    def get(self, cluster_id: str) -> GroupMember | None:
        """The member on ``cluster_id``, if any."""
        return self._members.get(cluster_id)

    def clusters(self) -> list[str]:
        """The clusters with a member."""
        return list(self._members)

    def items(self) -> list[tuple[str, GroupMember]]:
        """(cluster id, member) pairs."""
        return list(self._members.items())

    def owned(self) -> set[tuple[str, str, int]]:
        """Every (cluster, topic, partition) the group assigns to this query now."""
        return {(c, t, p) for c, m in self._members.items() for t, p in m.owned()}
