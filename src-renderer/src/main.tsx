import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { createApi } from './api/client';
import { ApiContext } from './api/hooks';
// The global sheet and the shared controls first: every feature's own sheet comes after them.
import './styles.css';
import './components/controls.css';
import { App } from './App';

const root = createRoot(document.getElementById('root')!);
const api = createApi();

if ('error' in api) {
  root.render(
    <div className="fatal" role="alert">
      <h1>Tributary</h1>
      <p>{api.error}</p>
    </div>,
  );
} else {
  // Data is pushed fresh by events, so no refetch on focus and a long staleTime.
  const queryClient = new QueryClient({
    defaultOptions: { queries: { staleTime: 30_000, refetchOnWindowFocus: false, retry: 1 } },
  });
  root.render(
    <StrictMode>
      <ApiContext.Provider value={api}>
        <QueryClientProvider client={queryClient}>
          <App />
        </QueryClientProvider>
      </ApiContext.Provider>
    </StrictMode>,
  );
}
