"""The deliberate breaks :mod:`breaks` runs: one-line breaks of the newer modules, each with
the test files that should catch it. This module: the gateway's and desk's; the agent's are
in :mod:`break_list_agent`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Break:
    """One deliberate break.

    Attributes:
        group: the module (or modules) it belongs to, as the summary counts them.
        path: the file, relative to the repository.
        old: an exact fragment of it, found exactly once (may span lines).
        new: what replaces it.
        tests: the test files that should catch it (relative paths).
        what: what a user would notice, in a few words.
    """

    group: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    what: str


FITTED = "tui_gateway/turns/fitted_turns.py"
_FT = ("tests/context/test_fitted_turns.py",)
_FT_CANCEL = ("tests/compression/test_cancel_compression_alone.py",)
DELEGATION = "tui_gateway/turns/delegation.py"
DELEGATION_TESTS = (
    "tests/gateway/test_delegation.py",
    "tests/gateway/test_delegation_order.py",
    "tests/gateway/test_delegation_interleavings.py",
)
STOP_KEYS = "desk/controllers/stop_keys.py"
_SK = (
    "tests/desk/test_stop_key_edges.py",
    "tests/desk/test_stop_under_load.py",
    "tests/desk/test_app_stop.py",
    "tests/desk/test_keys.py",
)
BREAKS: tuple[Break, ...] = (
    # -- tui_gateway/turns/fitted_turns.py -------------------------------------------------------
    Break(
        "fitted_turns",
        FITTED,
        "if turn.agent.stop_request is None:  # stopped:",
        "if True:  #",
        _FT,
        "a retry after a stop",
    ),
    Break(
        "fitted_turns",
        FITTED,
        "self.compress(session, turn, provider, manual=False, force=True)",
        "self.compress(session, turn, provider, manual=False, force=False)",
        _FT,
        "a retry without forced compression",
    ),
    Break(
        "fitted_turns",
        FITTED,
        "result.undelivered[:0] = first.undelivered",
        "result.undelivered[:0] = []",
        _FT,
        "steers the first attempt never took are lost",
    ),
    Break(
        "fitted_turns",
        FITTED,
        "turn.agent.carry_over()  #",
        "pass  #",
        _FT,
        "a stop that came late is lost (no carry_over)",
    ),
    Break(
        "fitted_turns",
        FITTED,
        "if not manual and self._saving_waits(session):",
        "if False:",
        _FT,
        "compressing while the session's writes wait",
    ),
    Break(
        "fitted_turns",
        FITTED,
        "and turn.agent.stop_request is None\n",
        "and turn.agent.stop_request is not None\n",
        _FT_CANCEL,
        "a cancelled compression forces one after all",
    ),
    Break(
        "fitted_turns",
        FITTED,
        "if did_not_fit(result) and not result.messages and not skipped:",
        "if did_not_fit(result) and not result.messages:",
        _FT_CANCEL,
        "a compression is forced after the person cancelled it",
    ),
    Break(
        "fitted_turns",
        FITTED,
        "            if skipped:\n",
        "            if False:\n",
        _FT_CANCEL,
        "the error no longer says the compression was cancelled",
    ),
    Break(
        "fitted_turns",
        FITTED,
        "result.error = not_sent_error(result)",
        "pass",
        _FT,
        "the error of a prompt that did not fit gives no figures",
    ),
    Break(
        "fitted_turns",
        FITTED,
        "self._compression_started(turn, compressor)",
        "pass",
        _FT,
        "a stop never reaches the compression",
    ),
    Break(
        "fitted_turns",
        FITTED,
        "        if not manual:\n",
        "        if manual:\n",
        _FT,
        "no 'compressing' state while it compresses",
    ),
    Break(
        "fitted_turns",
        FITTED,
        "if alone.beyond:",
        "if False:",
        ("tests/context/test_gateway_context.py", *_FT),
        "a prompt larger than the whole window has the history summarised, then is refused",
    ),
    Break(
        "fitted_turns",
        "tui_gateway/turns/compression.py",
        "return self.tokens + self.reply > FAR_BEYOND * self.window",
        "return not self.fits",
        _FT,
        "a server that counts nothing: a prompt near the window gets no summary tried",
    ),
    Break(
        "fitted_turns",
        "desk/controllers/turns.py",
        "box.give_back(block.text)",
        "pass",
        ("tests/desk/test_not_sent_back.py",),
        "a prompt refused as too large does not come back into the prompt box",
    ),
    # -- the delegation (tui_gateway/turns/delegation.py, child_outcome.py, turn_runner.py) ------
    Break(
        "delegation",
        DELEGATION,
        "if result.stop is not None:\n            self.wait_children",
        "if result.stop is None:\n            self.wait_children",
        DELEGATION_TESTS,
        "a stopped child ends before its own children (a depth-2 tree)",
    ),
    Break(
        "delegation",
        "tui_gateway/turns/turn_runner.py",
        "if result.stop is not None:  # the whole tree",
        "if False:  # the whole tree",
        ("tests/gateway/test_delegation_order.py",),
        "children end after the parent's message.complete",
    ),
    Break(
        "delegation",
        DELEGATION,
        "registration = parent.scope.register(scope)",
        "registration = InterruptScope('elsewhere').register(scope)",
        DELEGATION_TESTS,
        "a parent's stop never reaches its children",
    ),
    Break(
        "delegation",
        DELEGATION,
        "if len(running) >= width:",
        "if len(running) > width:",
        DELEGATION_TESTS,
        "one child more than delegate_width",
    ),
    Break(
        "delegation",
        DELEGATION,
        "if depth > limit:",
        "if depth > limit + 1:",
        DELEGATION_TESTS,
        "children nest deeper than delegate_depth",
    ),
    Break(
        "delegation",
        DELEGATION,
        "return ChildDelivery.STEER if link.parent.steer(steer) else",
        "return ChildDelivery.NOTE if link.parent.steer(steer) else",
        DELEGATION_TESTS,
        "a background child's answer is said to be a note though it steered",
    ),
    Break(
        "delegation",
        DELEGATION,
        "if not link.background:",
        "if link.background:",
        DELEGATION_TESTS,
        "a foreground child's answer delivered as a steer",
    ),
    Break(
        "delegation",
        DELEGATION,
        "self._persistence.child_ended(session, child, booked)",
        "pass",
        DELEGATION_TESTS,
        "a child's outcome is never saved",
    ),
    Break(
        "delegation",
        DELEGATION,
        "self._publish(session, completed_event(child, delivery))",
        "pass",
        DELEGATION_TESTS,
        "no child.complete",
    ),
    Break(
        "delegation",
        DELEGATION,
        "if self._config.delegate_depth > 0:",
        "if True:",
        DELEGATION_TESTS,
        "the delegate tool offered with delegation off",
    ),
    Break(
        "delegation",
        DELEGATION,
        "        if request.background:\n",
        "        if False:\n",
        DELEGATION_TESTS,
        "a background call waits like a foreground one",
    ),
    Break(
        "delegation",
        "tui_gateway/turns/child_outcome.py",
        "if stop is not None and stop.issuer is Issuer.USER:",
        "if stop is not None:",
        DELEGATION_TESTS,
        "a child's system stop reported as the person's",
    ),
    Break(
        "delegation",
        "tui_gateway/turns/child_outcome.py",
        "        return ToolResult(content=text)\n",
        "        return ToolResult.error(text)\n",
        DELEGATION_TESTS,
        "a child's answer reaches its parent as a tool error",
    ),
    Break(
        "delegation",
        DELEGATION,
        "self._roots[child_id] = self._roots.get(parent_turn_id, parent_turn_id)",
        "self._roots[child_id] = parent_turn_id",
        ("tests/gateway/test_delegation_checkpoints.py",),
        "a grandchild's file edits recorded outside the root turn's checkpoint",
    ),
    # -- the stop keys (desk/controllers/stop_keys.py) -------------------------------------------
    Break(
        "stop_keys",
        STOP_KEYS,
        "if self._quit.started:  # the quit stops",
        "if False:  #",
        _SK,
        "a key read on the input thread after quit began stops a turn",
    ),
    Break(
        "stop_keys",
        STOP_KEYS,
        "self._stopped_from_input_thread(key)  #",
        "pass  #",
        _SK,
        "a stop from the input thread is never announced to the UI",
    ),
    Break(
        "stop_keys",
        STOP_KEYS,
        "            self._turns.stop_sent(stopped)\n            self._stopped_from",
        "            self._stopped_from",
        _SK,
        "the UI never learns of a stop it did not send",
    ),
    # The next two survive: the UI sends again a key the gateway already keeps, with the same
    # time; the key rule (tui_gateway.stops.key_stops) lands the copy on the turn the first
    # stopped, except when two prompts entered before the key are in flight and the view still
    # shows an ended turn, a window no test here pins without a race.
    Break(
        "stop_keys",
        STOP_KEYS,
        "if view is None or sent:",
        "if view is None:",
        _SK,
        "a key the input thread sent is sent again by the UI",
    ),
    Break(
        "stop_keys",
        STOP_KEYS,
        "and not sent\n",
        "and True\n",
        _SK,
        "Ctrl+C the input thread sent is sent again by the UI",
    ),
    Break(
        "stop_keys",
        STOP_KEYS,
        "keyed_at = time.monotonic() if key_time is None else key_time",
        "keyed_at = time.monotonic()",
        _SK,
        "a key's own time ignored: it stops a later prompt",
    ),
    Break(
        "stop_keys",
        STOP_KEYS,
        "if self._console.stop_from_input_thread(read_at):",
        "if False:",
        _SK + ("tests/desk/test_console_panel.py",),
        "a focused console does not get the stop key",
    ),
    Break(
        "stop_keys",
        STOP_KEYS,
        "early, self._early = self._early, []",
        "early, self._early = [], []",
        _SK + ("tests/desk/test_late_gateway.py",),
        "a key pressed while desk starts is lost",
    ),
    Break(
        "stop_keys",
        STOP_KEYS,
        "        if self._quit.started:\n            return True\n",
        "        if False:\n            return True\n",
        _SK,
        "a key on the UI thread after quit began stops a turn",
    ),
    Break(
        "stop_keys",
        STOP_KEYS,
        "if not self._input_presses.press(key, read_at):",
        "if not self._input_presses.press(key, read_at) and False:",
        _SK + ("tests/desk/test_stop_key_setting.py",),
        "a double stop key stops on its first press",
    ),
)
