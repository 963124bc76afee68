# Copyright: rlark.ops contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The guarded stop, owned here: the policy that judges, the durable record, the transaction and its recovery."""
