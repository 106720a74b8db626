-- Drive the TVM Explorer language server from a headless Neovim (0.7+), as a Neovim user's
-- config would: start the client with vim.lsp.start_client, open bundle documents, and ask
-- with vim.lsp.buf_request_sync. Run: nvim --headless -u NONE -c "luafile lsp_queries.lua"
-- Input (TVMX_QUERIES, a JSON file): {"cmd": [...], "root": dir, "queries": [{"method",
-- "file", "line", "character"}]}. Output (TVMX_RESULTS): one result per query, or an error.
local function fail(msg)
  vim.fn.writefile({vim.fn.json_encode({error = msg})}, os.getenv("TVMX_RESULTS"))
  vim.cmd("qall!")
end

local spec = vim.fn.json_decode(table.concat(vim.fn.readfile(os.getenv("TVMX_QUERIES")), "\n"))
local root = spec.root
local client_id = vim.lsp.start_client({
  name = "tvm-explorer",
  cmd = spec.cmd,
  root_dir = root,
  workspace_folders = {{uri = vim.uri_from_fname(root), name = "bundles"}},
  init_options = {pollInterval = 0},
})
if not client_id then fail("start_client failed") return end

local ready = vim.wait(60000, function()
  local client = vim.lsp.get_client_by_id(client_id)
  return client ~= nil and client.server_capabilities ~= nil
end, 50)
if not ready then fail("server did not initialize") return end
local client = vim.lsp.get_client_by_id(client_id)

local loaded = vim.wait(120000, function()
  local resp = client.request_sync("tvmExplorer/listBundles", {}, 5000, 0)
  return resp ~= nil and resp.result ~= nil and #resp.result.bundles > 0
end, 200)
if not loaded then fail("no bundle loaded") return end

local results = {}
for _, q in ipairs(spec.queries) do
  vim.cmd("edit " .. vim.fn.fnameescape(q.file))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(bufnr, client_id)
  local params = {
    textDocument = {uri = vim.uri_from_bufnr(bufnr)},
    position = {line = q.line, character = q.character},
  }
  local answers = vim.lsp.buf_request_sync(bufnr, q.method, params, 30000)
  local answer = answers and answers[client_id]
  if answer == nil then
    table.insert(results, {error = "no answer to " .. q.method})
  elseif answer.err then
    table.insert(results, {error = vim.inspect(answer.err)})
  else
    table.insert(results, {result = answer.result or vim.NIL})
  end
end
vim.fn.writefile({vim.fn.json_encode(results)}, os.getenv("TVMX_RESULTS"))
client.stop()
vim.wait(2000, function() return vim.lsp.client_is_stopped(client_id) end, 50)
vim.cmd("qall!")
