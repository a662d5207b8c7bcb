"""The official A2A Python SDK (PyPI's a2a-sdk) against a live acs-server (contract §12).

Run by test/a2a/python-client.test.ts through scripts/a2a-python.sh, which installs the SDK:

    scripts/a2a-python.sh test/a2a/python_client_check.py CONFIG_JSON

CONFIG_JSON names the agents' A2A URLs and the keys: {"echo", "writer", "asker", "stranger": URL,
"caller_key": the MCP key of an agent on an edge with echo, writer and asker (not stranger),
"outsider_key": the MCP key of an agent of another team}. The program does what an A2A client
does — reads a card, sends to the echo agent and waits, streams the writer's task, lists and gets
tasks, cancels a task whose agent waits on a person, and calls where it may not — and prints what
it saw as one JSON object on stdout, for the test to check. It asserts nothing itself: a client
error it meets is part of what it reports.
"""

import asyncio
import json
import sys

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text, get_message_text, new_text_message
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)


def state(value: int) -> str:
    """A task state by its name (TASK_STATE_COMPLETED)."""
    return TaskState.Name(value)


def task_report(task) -> dict:
    """What a test checks of a task: its ids, state, artifacts' and history's texts."""
    return {
        "id": task.id,
        "context_id": task.context_id,
        "state": state(task.status.state),
        "artifacts": [get_artifact_text(a) for a in task.artifacts],
        "history": [[Role.Name(m.role), get_message_text(m)] for m in task.history],
    }


def error_report(error: BaseException) -> dict:
    """A client error as the test sees it: its class and message."""
    return {"error": type(error).__name__, "message": str(error)}


async def refused(call) -> dict:
    """Runs `call` (a coroutine factory) expecting a refusal: its error, or what it answered instead."""
    try:
        result = await call()
        return {"answered": str(result)}
    except Exception as error:  # noqa: BLE001 - the refusal is what is reported
        return error_report(error)


async def main(config: dict) -> dict:
    report: dict = {}
    headers = {"x-api-key": config["caller_key"]}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        # The card, as the SDK's resolver reads it.
        card = await A2ACardResolver(http, config["echo"]).get_agent_card()
        report["card"] = {
            "name": card.name,
            "description": card.description,
            "interfaces": sorted(f"{i.protocol_binding}@{i.protocol_version}" for i in card.supported_interfaces),
            "streaming": card.capabilities.streaming,
            "schemes": {name: scheme.api_key_security_scheme.name for name, scheme in card.security_schemes.items()},
        }

        # A blocking send to the echo agent: a completed task with the echo as its artifact.
        blocking = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        sent = [event async for event in blocking.send_message(SendMessageRequest(message=new_text_message("hello from python", role=Role.ROLE_USER)))]
        report["echo"] = task_report(sent[-1].task)

        # A stream of the writer's task (a provider agent; the OpenAI stand-in), to its end.
        writer_card = await A2ACardResolver(http, config["writer"]).get_agent_card()
        streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(writer_card)
        events = []
        async for event in streaming.send_message(SendMessageRequest(message=new_text_message("a limerick", role=Role.ROLE_USER))):
            kind = event.WhichOneof("payload")
            if kind == "task":
                events.append(["task", state(event.task.status.state)])
            elif kind == "status_update":
                events.append(["status", state(event.status_update.status.state)])
            elif kind == "artifact_update":
                update = event.artifact_update
                how = ("append" if update.append else "open") if not update.last_chunk else "whole"
                events.append(["artifact", how, update.artifact.artifact_id, get_artifact_text(update.artifact)])
        report["stream"] = events

        # Lists and gets: the echo agent's tasks for this caller, and one of them with its history.
        listed = await blocking.list_tasks(ListTasksRequest(include_artifacts=True))
        report["list"] = {"ids": [t.id for t in listed.tasks], "states": [state(t.status.state) for t in listed.tasks], "total": listed.total_size}
        got = await blocking.get_task(GetTaskRequest(id=report["echo"]["id"]))
        report["get"] = task_report(got)

        # A task whose agent waits on a person: sent without waiting, seen working, canceled.
        asker_card = await A2ACardResolver(http, config["asker"]).get_agent_card()
        asker = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(asker_card)
        request = SendMessageRequest(message=new_text_message("repaint the barn", role=Role.ROLE_USER), configuration=SendMessageConfiguration(return_immediately=True))
        submitted = [event async for event in asker.send_message(request)][-1].task
        seen = [state(submitted.status.state)]
        for _ in range(600):
            now = await asker.get_task(GetTaskRequest(id=submitted.id))
            if state(now.status.state) != seen[-1]:
                seen.append(state(now.status.state))
            if now.status.state == TaskState.TASK_STATE_WORKING:
                break
            await asyncio.sleep(0.05)
        canceled = await asker.cancel_task(CancelTaskRequest(id=submitted.id))
        report["cancel"] = {"id": submitted.id, "seen": seen, "after": state(canceled.status.state)}

        # Where it may not call: an agent of its team it shares no edge with.
        stranger_card = AgentCard()
        stranger_card.CopyFrom(card)
        for interface in stranger_card.supported_interfaces:
            interface.url = config["stranger"]
        stranger = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(stranger_card)
        report["no_edge"] = {
            "card": await refused(lambda: A2ACardResolver(http, config["stranger"]).get_agent_card()),
            "send": await refused(lambda: anext(stranger.send_message(SendMessageRequest(message=new_text_message("let me in", role=Role.ROLE_USER))))),
            "list": await refused(lambda: stranger.list_tasks(ListTasksRequest())),
        }

    # With another team's key: the echo agent, refused alike.
    async with httpx.AsyncClient(headers={"x-api-key": config["outsider_key"]}, timeout=60) as http:
        outsider = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        report["other_team"] = {
            "card": await refused(lambda: A2ACardResolver(http, config["echo"]).get_agent_card()),
            "send": await refused(lambda: anext(outsider.send_message(SendMessageRequest(message=new_text_message("let me in", role=Role.ROLE_USER))))),
            "get": await refused(lambda: outsider.get_task(GetTaskRequest(id=report["echo"]["id"]))),
            "cancel": await refused(lambda: outsider.cancel_task(CancelTaskRequest(id=report["cancel"]["id"]))),
        }
    return report


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.loads(sys.argv[1])))))
